package main

import (
	"strconv"
	"time"
)

// The payload is ~500 bytes of JSON that starts with two fixed-width fields,
// so the receiver reads the event number and the publish time without
// decoding JSON:
//
//	{"n":0000000042,"sent_ns":1712345678901234567,"id":"evt_...", ...}
const (
	payloadSize   = 500
	nPrefix       = `{"n":`
	sentPrefix    = `,"sent_ns":`
	nDigits       = 10
	sentDigits    = 19
	nStart        = len(nPrefix)
	nEnd          = nStart + nDigits
	sentStart     = nEnd + len(sentPrefix)
	sentEnd       = sentStart + sentDigits
	payloadFiller = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur."
)

// eventID is the Nats-Msg-Id (and so the webhook-id) of event n.
func eventID(n int) string { return "evt_" + strconv.Itoa(n) }

// eventType is the event type endpoint ep subscribes to.
func eventType(ep int) string { return "bench.e" + strconv.Itoa(ep) }

// appendPayload appends the JSON body of event n, published at sent, bound
// for endpoint ep, padded to payloadSize bytes.
func appendPayload(b []byte, n int, sent time.Time, ep int) []byte {
	start := len(b)
	b = append(b, nPrefix...)
	b = appendPadded(b, int64(n), nDigits)
	b = append(b, sentPrefix...)
	b = appendPadded(b, sent.UnixNano(), sentDigits)
	b = append(b, `,"id":"evt_`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `","type":"bench.e`...)
	b = strconv.AppendInt(b, int64(ep), 10)
	b = append(b, `","created_at":"`...)
	b = sent.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","data":{"object":"invoice","customer":"cus_9s8d7f6g5h4j3k2l","amount_cents":129990,"currency":"eur","paid":true,"lines":[{"sku":"plan-pro","qty":1},{"sku":"seat","qty":12}],"note":"`...)
	// Close with `"}}` and fill the note up to payloadSize.
	fill := payloadSize - (len(b) - start) - len(`"}}`)
	for fill > 0 {
		k := min(fill, len(payloadFiller))
		b = append(b, payloadFiller[:k]...)
		fill -= k
	}
	return append(b, `"}}`...)
}

func appendPadded(b []byte, v int64, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// parsePayload reads the event number and publish time (unix nanoseconds)
// from a body built by appendPayload; ok is false for anything else.
func parsePayload(b []byte) (n int, sentNanos int64, ok bool) {
	if len(b) < sentEnd || string(b[:nStart]) != nPrefix || string(b[nEnd:sentStart]) != sentPrefix {
		return 0, 0, false
	}
	nn, ok1 := parseDigits(b[nStart:nEnd])
	sn, ok2 := parseDigits(b[sentStart:sentEnd])
	return int(nn), sn, ok1 && ok2
}

func parseDigits(b []byte) (int64, bool) {
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}
