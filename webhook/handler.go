package webhook

import (
	"bytes"
	"errors"
	"io"
	"net/http"
)

// MaxBodyBytes is the largest request body [Handler] reads; a larger one is
// refused with 413 Request Entity Too Large.
const MaxBodyBytes = 1 << 20

// Handler returns middleware that verifies each request with v, drops
// duplicates with d, and calls next once per webhook id. next sees the
// original body, already read and verified.
//
// Responses written by Handler itself:
//   - 405 Method Not Allowed for anything but POST;
//   - 413 Request Entity Too Large for a body over [MaxBodyBytes];
//   - 400 Bad Request for an unreadable body, a missing header or a
//     malformed timestamp;
//   - 401 Unauthorized for a timestamp outside the tolerance or a signature
//     that matches no secret;
//   - 200 OK, without calling next, for a duplicate of a delivery that next
//     already handled with a 2xx status;
//   - 503 Service Unavailable for a duplicate that arrives while next is
//     still handling the first delivery, so the sender retries it later.
//
// If next responds with a status other than 2xx, or panics, the id is
// forgotten so that the sender's retry is processed. A nil d disables
// deduplication. Handler panics if v or next is nil.
func Handler(v *Verifier, d *Deduper, next http.Handler) http.Handler {
	if v == nil || next == nil {
		panic("webhook: Handler needs a Verifier and a next handler")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := readBody(w, r)
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		if err := v.Verify(r.Header, body); err != nil {
			http.Error(w, err.Error(), verifyStatus(err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if d == nil {
			next.ServeHTTP(w, r)
			return
		}

		id := r.Header.Get(HeaderID)
		gen, st := d.claim(id, true)
		switch st {
		case claimDone:
			w.WriteHeader(http.StatusOK)
			return
		case claimPending:
			http.Error(w, "delivery "+id+" is being processed", http.StatusServiceUnavailable)
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		processed := false
		defer func() { d.settle(id, gen, processed) }() // also on panic
		next.ServeHTTP(rec, r)
		processed = rec.status == 0 || (rec.status >= 200 && rec.status < 300) // 0: nothing written, an implicit 200
	})
}

// readBody reads at most MaxBodyBytes of the request body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBodyBytes {
		return nil, &http.MaxBytesError{Limit: MaxBodyBytes}
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	return buf.Bytes(), err
}

// verifyStatus maps a Verify error to a response status.
func verifyStatus(err error) int {
	switch {
	case errors.Is(err, ErrMissingHeader), errors.Is(err, ErrInvalidTimestamp):
		return http.StatusBadRequest
	default:
		return http.StatusUnauthorized
	}
}

// statusRecorder remembers the status next writes. It unwraps for
// http.ResponseController, so next can still flush or hijack.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
