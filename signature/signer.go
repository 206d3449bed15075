package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"log/slog"
	"strconv"
	"strings"
	"sync"
)

// Standard Webhooks header names, in the lower case the specification uses.
const (
	// HeaderID carries the event id, identical on every retry and replay.
	HeaderID = "webhook-id"
	// HeaderTimestamp carries the unix time in seconds of the attempt.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderSignature carries space-separated "v1,<base64>" signatures.
	HeaderSignature = "webhook-signature"
)

// version starts every signature this package produces and accepts.
const version = "v1,"

// sigLen is the length of one "v1,<base64 HMAC-SHA256>" entry.
var sigLen = len(version) + base64.StdEncoding.EncodedLen(sha256.Size)

// sigEncoding decodes signatures. Strict: exactly one encoding of a MAC is
// accepted, the one every Standard Webhooks sender produces.
var sigEncoding = base64.StdEncoding.Strict()

// maxPooledPrefix bounds the signed-prefix buffer kept for reuse, so that one
// message with a huge id does not pin memory.
const maxPooledPrefix = 4 << 10

// Signer signs and verifies Standard Webhooks signatures with one or more
// keys. It is safe for concurrent use. Its keys never appear in its string or
// log representations.
type Signer struct {
	keys []signKey
}

// signKey is one key with a pool of HMAC states keyed by it, so that the hot
// path neither re-derives the HMAC pads nor allocates.
type signKey struct {
	pool *sync.Pool // of *macState
}

// macState is a reusable HMAC computation with scratch space.
type macState struct {
	mac    hash.Hash
	prefix []byte // id + "." + timestamp + "."
	sum    [sha256.Size]byte
}

// NewSigner returns a Signer for the given keys, which are decoded secrets
// (see [DecodeSecret]). The keys are copied. With several keys, signatures
// are produced in the given order, so that secrets rotate without downtime.
// A Signer without keys signs nothing and verifies nothing.
func NewSigner(keys ...[]byte) *Signer {
	s := &Signer{keys: make([]signKey, len(keys))}
	for i, k := range keys {
		key := append([]byte(nil), k...)
		s.keys[i].pool = &sync.Pool{New: func() any {
			return &macState{mac: hmac.New(sha256.New, key), prefix: make([]byte, 0, 64)}
		}}
	}
	return s
}

// Len returns the number of keys the Signer signs with.
func (s *Signer) Len() int { return len(s.keys) }

// Sign returns the webhook-signature header value for a message: for each
// key "v1," + base64(HMAC-SHA256(key, id + "." + ts + "." + body)),
// separated by single spaces. ts is the webhook-timestamp in Unix seconds.
func (s *Signer) Sign(id string, ts int64, body []byte) string {
	if len(s.keys) == 0 {
		return ""
	}
	return string(s.AppendSign(make([]byte, 0, len(s.keys)*(sigLen+1)), id, ts, body))
}

// AppendSign appends the value [Signer.Sign] would return to dst and
// returns the extended buffer. With enough capacity in dst it does not
// allocate.
func (s *Signer) AppendSign(dst []byte, id string, ts int64, body []byte) []byte {
	for i := range s.keys {
		if i > 0 {
			dst = append(dst, ' ')
		}
		st := s.keys[i].get()
		st.prefix = append(st.prefix[:0], id...)
		st.prefix = append(st.prefix, '.')
		st.prefix = strconv.AppendInt(st.prefix, ts, 10)
		st.prefix = append(st.prefix, '.')
		st.compute(body)
		dst = append(dst, version...)
		dst = base64.StdEncoding.AppendEncode(dst, st.sum[:])
		s.keys[i].put(st)
	}
	return dst
}

// Verify reports whether some "v1," entry of the webhook-signature header
// values sigs is the signature of (id, ts, body) by some key of the Signer.
// ts is the webhook-timestamp header value exactly as received; checking
// that it is recent is the caller's job. Entries of other versions and
// malformed entries are ignored. MACs are compared in constant time.
func (s *Signer) Verify(id, ts string, sigs []string, body []byte) bool {
	var sums [4][sha256.Size]byte // most senders rotate between one and two keys
	want := sums[:0]
	if len(s.keys) > len(sums) {
		want = make([][sha256.Size]byte, 0, len(s.keys))
	}
	for i := range s.keys {
		st := s.keys[i].get()
		st.prefix = append(st.prefix[:0], id...)
		st.prefix = append(st.prefix, '.')
		st.prefix = append(st.prefix, ts...)
		st.prefix = append(st.prefix, '.')
		st.compute(body)
		want = append(want, st.sum)
		s.keys[i].put(st)
	}
	var got [sha256.Size + 2]byte // DecodedLen of 44 base64 characters is 33
	for _, header := range sigs {
		for entry := range strings.FieldsSeq(header) {
			sig, ok := strings.CutPrefix(entry, version)
			if !ok || len(sig) != sigLen-len(version) {
				continue
			}
			n, err := sigEncoding.Decode(got[:], []byte(sig))
			if err != nil || n != sha256.Size {
				continue
			}
			for i := range want {
				if hmac.Equal(got[:n], want[i][:]) {
					return true
				}
			}
		}
	}
	return false
}

func (k *signKey) get() *macState { return k.pool.Get().(*macState) }

func (k *signKey) put(st *macState) {
	if cap(st.prefix) <= maxPooledPrefix { // do not pin a huge id in the pool
		k.pool.Put(st)
	}
}

// compute sets st.sum to the HMAC of st.prefix followed by body.
func (st *macState) compute(body []byte) {
	st.mac.Reset()
	st.mac.Write(st.prefix) // hash.Hash.Write never returns an error
	st.mac.Write(body)
	st.mac.Sum(st.sum[:0])
}

// String describes the Signer without revealing its keys.
func (s *Signer) String() string {
	return "signature.Signer{keys: " + strconv.Itoa(len(s.keys)) + "}"
}

// GoString describes the Signer without revealing its keys, for %#v.
func (s *Signer) GoString() string { return s.String() }

// LogValue implements [slog.LogValuer]: the keys are redacted.
func (s *Signer) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("keys", len(s.keys)))
}
