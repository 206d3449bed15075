package deliver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"log/slog"
	"strconv"
	"sync"
)

// sigLen is the length of one "v1,<base64 HMAC-SHA256>" value.
var sigLen = len("v1,") + base64.StdEncoding.EncodedLen(sha256.Size)

// Signer computes Standard Webhooks signatures with one or more secrets.
// It is safe for concurrent use. Its keys never appear in its string or log
// representations.
type Signer struct {
	keys []signKey
}

// signKey is one secret with a pool of HMAC states keyed by it, so that the
// hot path neither re-derives the HMAC pads nor allocates.
type signKey struct {
	pool *sync.Pool // of *macState
}

// macState is a reusable HMAC computation with scratch space.
type macState struct {
	mac    hash.Hash
	prefix []byte // id + "." + timestamp + "."
	sum    []byte
}

// NewSigner returns a Signer for the given secrets, which are the decoded
// secret bytes (the caller strips "whsec_" and base64-decodes). The keys are
// copied. With several keys, signatures are produced in the given order, so
// that secrets rotate without downtime. A Signer without keys signs nothing.
func NewSigner(keys ...[]byte) *Signer {
	s := &Signer{keys: make([]signKey, len(keys))}
	for i, k := range keys {
		key := append([]byte(nil), k...)
		s.keys[i].pool = &sync.Pool{New: func() any {
			return &macState{
				mac:    hmac.New(sha256.New, key),
				prefix: make([]byte, 0, 64),
				sum:    make([]byte, 0, sha256.Size),
			}
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
		st := s.keys[i].pool.Get().(*macState)
		st.prefix = append(st.prefix[:0], id...)
		st.prefix = append(st.prefix, '.')
		st.prefix = strconv.AppendInt(st.prefix, ts, 10)
		st.prefix = append(st.prefix, '.')
		st.mac.Reset()
		st.mac.Write(st.prefix) // hash.Hash.Write never returns an error
		st.mac.Write(body)
		st.sum = st.mac.Sum(st.sum[:0])
		dst = append(dst, "v1,"...)
		dst = base64.StdEncoding.AppendEncode(dst, st.sum)
		if cap(st.prefix) <= 4096 { // do not pin a huge id in the pool
			s.keys[i].pool.Put(st)
		}
	}
	return dst
}

// String describes the Signer without revealing its keys.
func (s *Signer) String() string {
	return "deliver.Signer{keys: " + strconv.Itoa(len(s.keys)) + "}"
}

// GoString describes the Signer without revealing its keys, for %#v.
func (s *Signer) GoString() string { return s.String() }

// LogValue implements [slog.LogValuer]: the keys are redacted.
func (s *Signer) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("keys", len(s.keys)))
}
