package inbound

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // scheme hmac may be configured with sha1
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/signature"
)

// Sign returns the headers with which src's provider would send an event
// with id, type typ and body at now, signed with src's first secret: what
// `hookjet inbound test` sends, and what tests use. For scheme hmac the id
// and type go in id_header and type_header when they are configured.
func Sign(src config.InboundSource, id, typ string, body []byte, now time.Time) (http.Header, error) {
	if len(src.Secrets) == 0 {
		return nil, errors.New("the source has no secret")
	}
	secret := src.Secrets[0].Reveal()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	switch src.Scheme {
	case config.SchemeStandard:
		key, err := signature.DecodeSecret(secret)
		if err != nil {
			return nil, err
		}
		ts := now.Unix()
		h.Set(signature.HeaderID, id)
		h.Set(signature.HeaderTimestamp, strconv.FormatInt(ts, 10))
		h.Set(signature.HeaderSignature, signature.NewSigner(key).Sign(id, ts, body))
	case config.SchemeStripe:
		ts := strconv.FormatInt(now.Unix(), 10)
		h.Set(keyStripeSignature, "t="+ts+",v1="+hex.EncodeToString(macOf(sha256.New, secret, []byte(ts+"."), body)))
	case config.SchemeGitHub:
		h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(macOf(sha256.New, secret, nil, body)))
		h.Set("X-GitHub-Delivery", id)
		h.Set("X-GitHub-Event", typ)
	case config.SchemeShopify:
		h.Set("X-Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(macOf(sha256.New, secret, nil, body)))
		h.Set("X-Shopify-Webhook-Id", id)
		h.Set("X-Shopify-Topic", strings.ReplaceAll(typ, ".", "/"))
	case config.SchemeHMAC:
		newHash := sha256.New
		switch src.Algorithm {
		case "sha1":
			newHash = sha1.New
		case "sha512":
			newHash = sha512.New
		}
		mac := macOf(newHash, secret, nil, body)
		enc := hex.EncodeToString(mac)
		if src.Encoding == "base64" {
			enc = base64.StdEncoding.EncodeToString(mac)
		}
		h.Set(src.Header, src.Prefix+enc)
		if src.IDHeader != "" {
			h.Set(src.IDHeader, id)
		}
		if src.TypeHeader != "" {
			h.Set(src.TypeHeader, typ)
		}
	default:
		return nil, errors.New("unknown scheme " + strconv.Quote(src.Scheme))
	}
	return h, nil
}

func macOf(newHash func() hash.Hash, secret string, prefix, body []byte) []byte {
	m := hmac.New(newHash, []byte(secret))
	m.Write(prefix)
	m.Write(body)
	return m.Sum(nil)
}

// TestEvent is a synthetic event for a source, signed with its first
// secret: what `hookjet inbound test` sends.
type TestEvent struct {
	Header http.Header
	Body   []byte
	// ID is the id the gateway stores it under (Hookjet-Inbound-Id).
	ID string
	// Type is the type it is stored under ("" for scheme hmac without
	// type_header).
	Type string
}

// TestEventType is the type of the synthetic events `hookjet inbound test`
// sends (sources whose scheme carries a type).
const TestEventType = "hookjet.test"

// NewTestEvent builds a synthetic event with id for src at now. Its body is
// a JSON object with the id and type (where Stripe and Standard Webhooks
// senders put them) and "hookjet_test": true.
func NewTestEvent(src config.InboundSource, id string, now time.Time) (TestEvent, error) {
	body, err := json.Marshal(map[string]any{
		"id": id, "type": TestEventType, "object": "event", "created": now.Unix(),
		"data": map[string]any{"hookjet_test": true},
	})
	if err != nil {
		return TestEvent{}, err
	}
	h, err := Sign(src, id, TestEventType, body, now)
	if err != nil {
		return TestEvent{}, err
	}
	ev := TestEvent{Header: h, Body: body, ID: id, Type: TestEventType}
	if src.Scheme == config.SchemeHMAC {
		if src.IDHeader == "" {
			ev.ID = eventID("", body)
		}
		if src.TypeHeader == "" {
			ev.Type = ""
		}
	}
	return ev, nil
}
