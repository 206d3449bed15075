package test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
)

// retryLog captures the "retrying" lines of hookjet's log: the due time of
// each retry, by event id and attempt, as the log states it.
type retryLog struct {
	slog.Handler
	mu  *sync.Mutex
	due map[string]time.Time // "<event id>/<attempt>" -> retry_at
}

func (l retryLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "delivery failed; retrying" {
		var id, at string
		var n int64
		var in time.Duration
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "event_id":
				id = a.Value.String()
			case "attempt":
				n = a.Value.Int64()
			case "retry_at":
				at = a.Value.String()
			case "retry_in":
				in = a.Value.Duration()
			}
			return true
		})
		due, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			due = r.Time.Add(in) // a log line with retry_in only
		}
		l.mu.Lock()
		l.due[fmt.Sprintf("%s/%d", id, n)] = due
		l.mu.Unlock()
	}
	return l.Handler.Handle(ctx, r)
}

func (l retryLog) WithAttrs(as []slog.Attr) slog.Handler {
	return retryLog{Handler: l.Handler.WithAttrs(as), mu: l.mu, due: l.due}
}

func (l retryLog) WithGroup(name string) slog.Handler {
	return retryLog{Handler: l.Handler.WithGroup(name), mu: l.mu, due: l.due}
}

// A retry goes at the time hookjet says it is due, whatever its backoff: an
// endpoint answering 500 with retry.base 1s gets each retry within a second
// of the retry_at its log line gave (p99 over every retry), never before it,
// not on a grid of rescans.
func TestRetryAttemptedAtItsLoggedDueTime(t *testing.T) {
	rcv := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	const attempts = 5
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "flaky", URL: rcv.URL,
		Extra: fmt.Sprintf("    retry: {base: 1s, cap: 4s, max_attempts: %d, max_age: 1h}\n    breaker: {failure_threshold: 10000}\n", attempts)})
	logs := retryLog{Handler: slog.NewTextHandler(tLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}), mu: &sync.Mutex{}, due: map[string]time.Time{}}
	h := startHookjet(t, cfg, cli.Options{Log: slog.New(logs)})
	ids := []string{"evt-due-1", "evt-due-2", "evt-due-3", "evt-due-4", "evt-due-5", "evt-due-6"}
	for _, id := range ids {
		h.publish("order.created", id, []byte(`{"n":1}`))
	}
	// The API gives the due time too: next_retry is one the log stated.
	checkFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		var st struct {
			NextRetry *time.Time `json:"next_retry"`
		}
		if code := h.api("GET", "/api/v1/endpoints/flaky", "", nil, &st); code != http.StatusOK {
			return fmt.Errorf("show: HTTP %d", code)
		}
		if st.NextRetry == nil {
			return fmt.Errorf("no next_retry")
		}
		logs.mu.Lock()
		defer logs.mu.Unlock()
		for _, due := range logs.due {
			if due.Equal(*st.NextRetry) {
				return nil
			}
		}
		return fmt.Errorf("next_retry %s is no logged retry_at", st.NextRetry)
	})
	checkFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		for _, id := range ids {
			if n := rcv.requestsFor(id); n < attempts {
				return fmt.Errorf("%s: %d of %d attempts", id, n, attempts)
			}
		}
		return nil
	})
	logs.mu.Lock()
	defer logs.mu.Unlock()
	var late []time.Duration
	for _, d := range rcv.deliveries() {
		if d.Attempt == 1 {
			continue
		}
		due, ok := logs.due[fmt.Sprintf("%s/%d", d.ID, d.Attempt-1)]
		if !ok {
			t.Fatalf("%s attempt %d: no retry_at logged for it", d.ID, d.Attempt)
		}
		late = append(late, d.At.Sub(due))
	}
	slices.Sort(late)
	p99 := late[(len(late)*99)/100]
	t.Logf("%d retries: attempted after their logged due time by min %s, median %s, p99 %s, max %s",
		len(late), late[0].Round(time.Millisecond), late[len(late)/2].Round(time.Millisecond), p99.Round(time.Millisecond), late[len(late)-1].Round(time.Millisecond))
	if late[0] < -50*time.Millisecond {
		t.Errorf("a retry went %s before its logged due time", -late[0])
	}
	if p99 > time.Second {
		t.Errorf("p99 of (attempt - logged due time) is %s, want within 1s", p99)
	}
}
