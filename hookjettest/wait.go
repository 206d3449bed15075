package hookjettest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hookjet/hookjet/jetstream"
)

// poll is how often waits look again.
const poll = 10 * time.Millisecond

// DeadLetter is one message in the dead-letter stream (HOOKJET_DLQ), as the
// admin API's GET /api/v1/dlq lists it.
type DeadLetter struct {
	Seq       uint64
	EventID   string
	EventType string
	Endpoint  string
	// Reason is permanent, exhausted, expired, gone or rejected.
	Reason   string
	Attempts int
	// LastStatus is the last HTTP status; 0 when there was no response.
	LastStatus int
	LastError  string
	// FirstAttempt and LastAttempt are zero when no attempt was made.
	FirstAttempt, LastAttempt time.Time
}

// deadLetterOf converts the admin API's dead letter.
func deadLetterOf(e jetstream.DLQEntry) DeadLetter {
	first, _ := time.Parse(time.RFC3339, e.FirstAttempt)
	last, _ := time.Parse(time.RFC3339, e.LastAttempt)
	return DeadLetter{Seq: e.Seq, EventID: e.EventID, EventType: e.EventType, Endpoint: e.Endpoint,
		Reason: e.Reason, Attempts: e.Attempts, LastStatus: e.LastStatus, LastError: e.LastError,
		FirstAttempt: first, LastAttempt: last}
}

// WaitDelivered waits until endpoint answered 2xx to the event with id
// eventID and hookjet recorded the delivery. It fails the test at once when
// the event was dead-lettered for that endpoint instead (naming the reason
// and the last status and error), and after the wait timeout (10s unless
// [WithTimeout]) with what the admin API knows about the endpoint.
func (h *Hookjet) WaitDelivered(endpoint, eventID string) {
	h.t.Helper()
	if err := h.waitDelivered(endpoint, eventID); err != nil {
		h.t.Fatalf("hookjettest: %v", err)
	}
}

func (h *Hookjet) waitDelivered(endpoint, eventID string) error {
	if !h.known(endpoint) {
		return fmt.Errorf("WaitDelivered: no endpoint %q (AddEndpoint returns the id)", endpoint)
	}
	deadline := time.Now().Add(h.o.wait)
	for i := 0; ; i++ {
		ok, err := h.srv.Delivered(endpoint, eventID)
		if err != nil {
			return fmt.Errorf("WaitDelivered(%q, %q): %w", endpoint, eventID, err)
		}
		if ok {
			return nil
		}
		last := time.Now().After(deadline)
		if i%10 == 0 || last {
			dls, err := h.deadLetters(endpoint, eventID)
			if err != nil {
				return err
			}
			if len(dls) > 0 {
				d := dls[0]
				return fmt.Errorf("event %q was dead-lettered for endpoint %q instead of delivered: reason %s after %d attempts, last status %d, last error %q",
					eventID, endpoint, d.Reason, d.Attempts, d.LastStatus, d.LastError)
			}
		}
		if last {
			var detail json.RawMessage
			if err := h.get("/api/v1/endpoints/"+url.PathEscape(endpoint), &detail); err != nil {
				detail = json.RawMessage(strconv.Quote(err.Error()))
			}
			return fmt.Errorf("event %q not delivered to endpoint %q within %s; the endpoint: %s", eventID, endpoint, h.o.wait, detail)
		}
		time.Sleep(poll)
	}
}

// DeadLetters returns the dead letters of endpoint ("" : of every
// endpoint), oldest first.
func (h *Hookjet) DeadLetters(endpoint string) []DeadLetter {
	h.t.Helper()
	dls, err := h.deadLetters(endpoint, "")
	if err != nil {
		h.t.Fatalf("hookjettest: %v", err)
	}
	return dls
}

// WaitDeadLetter waits until the event with id eventID is in the
// dead-letter stream for endpoint and returns it. It fails the test at once
// when the endpoint accepted the event instead, and after the wait timeout.
func (h *Hookjet) WaitDeadLetter(endpoint, eventID string) DeadLetter {
	h.t.Helper()
	d, err := h.waitDeadLetter(endpoint, eventID)
	if err != nil {
		h.t.Fatalf("hookjettest: %v", err)
	}
	return d
}

func (h *Hookjet) waitDeadLetter(endpoint, eventID string) (DeadLetter, error) {
	if !h.known(endpoint) {
		return DeadLetter{}, fmt.Errorf("WaitDeadLetter: no endpoint %q (AddEndpoint returns the id)", endpoint)
	}
	deadline := time.Now().Add(h.o.wait)
	for {
		dls, err := h.deadLetters(endpoint, eventID)
		if err != nil {
			return DeadLetter{}, err
		}
		if len(dls) > 0 {
			return dls[0], nil
		}
		if ok, err := h.srv.Delivered(endpoint, eventID); err == nil && ok {
			return DeadLetter{}, fmt.Errorf("event %q was delivered to endpoint %q, not dead-lettered", eventID, endpoint)
		}
		if time.Now().After(deadline) {
			return DeadLetter{}, fmt.Errorf("event %q not dead-lettered for endpoint %q within %s", eventID, endpoint, h.o.wait)
		}
		time.Sleep(poll)
	}
}

// known reports whether endpoint was added.
func (h *Hookjet) known(endpoint string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ids[endpoint]
}

// deadLetters lists dead letters through the admin API.
func (h *Hookjet) deadLetters(endpoint, eventID string) ([]DeadLetter, error) {
	q := url.Values{"limit": {"10000"}}
	if endpoint != "" {
		q.Set("endpoint", endpoint)
	}
	if eventID != "" {
		q.Set("ids", eventID)
	}
	var out struct {
		Entries []jetstream.DLQEntry `json:"entries"`
	}
	if err := h.get("/api/v1/dlq?"+q.Encode(), &out); err != nil {
		return nil, err
	}
	dls := make([]DeadLetter, len(out.Entries))
	for i, e := range out.Entries {
		dls[i] = deadLetterOf(e)
	}
	return dls, nil
}

// get calls the admin API and decodes its JSON answer into out.
func (h *Hookjet) get(path string, out any) error {
	return h.call(http.MethodGet, path, nil, http.StatusOK, out)
}

// call sends a JSON body (nil: none) to the admin API, expects status want
// and decodes the answer into out (nil: ignored).
func (h *Hookjet) call(method, path string, body []byte, want int, out any) error {
	req, err := http.NewRequest(method, h.AdminURL()+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("admin API %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.api.Do(req)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("admin API %s %s: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("admin API %s %s: HTTP %d: %s", method, path, resp.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("admin API %s %s: %w", method, path, err)
	}
	return nil
}
