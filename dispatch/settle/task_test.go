package settle

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// A stored delivery is checked again against its endpoint when taken: an
// event of another tenant, or one stored for an earlier incarnation of the
// id, is not the endpoint's.
func TestNotForEndpoint(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ep := &config.Endpoint{ID: "e", Tenant: "acme", CreatedAt: created}
	mine := nats.Header{}
	MarkIncarnation(mine, created)
	earlier := nats.Header{}
	MarkIncarnation(earlier, created.Add(-time.Hour))
	for _, tt := range []struct {
		name string
		h    nats.Header
		ev   Event
		want bool
	}{
		{"its tenant's event", mine, Event{Tenant: "acme"}, false},
		{"another tenant's event", mine, Event{Tenant: "globex"}, true},
		{"an event without a tenant", mine, Event{}, true},
		{"a bad tenant header", mine, Event{BadTenant: "bad"}, true},
		{"an earlier incarnation's task", earlier, Event{Tenant: "acme"}, true},
		{"a task without the mark", nats.Header{}, Event{Tenant: "acme"}, false},
	} {
		if got := NotForEndpoint(tt.h, &tt.ev, ep); got != tt.want {
			t.Errorf("%s: NotForEndpoint = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A task carries its delivery whole: read back, it is the event and the
// attempt state it was stored with, its payload and the publisher's
// content type, ordering key and trace; a retry is a schedule on the
// event's own subject, due on the endpoint's tasks subject.
func TestTaskReadsBackWhatItCarries(t *testing.T) {
	published := time.Date(2026, 12, 1, 10, 0, 0, 123_000_000, time.UTC)
	ev := Event{ID: "evt_1", Type: "order.created", Key: "42", Seq: 42, At: published, Tenant: "acme"}
	// Attempt times travel to the second (Hookjet-First-Attempt and
	// Hookjet-Last-Attempt are RFC 3339).
	st := State{Attempts: 3, First: published.Truncate(time.Second).Add(time.Second), Last: published.Truncate(time.Second).Add(time.Minute), Status: 503, Error: "503 Service Unavailable"}
	src := nats.Header{}
	src.Set(jetstream.HdrContentType, "application/json")
	src.Set(jetstream.HdrOrderingKey, "order-7")
	src.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")

	due := TaskMsg("ep", &ev, st, []byte(`{"n":1}`), src, time.Time{})
	if due.Subject != jetstream.TasksPrefix+"ep" || due.Header.Get(hdrSchedule) != "" {
		t.Fatalf("a due task: subject %q, schedule %q", due.Subject, due.Header.Get(hdrSchedule))
	}
	gotEv, gotSt := TaskOf(due.Header, time.Now())
	if gotEv.ID != ev.ID || gotEv.Type != ev.Type || gotEv.Key != ev.Key || gotEv.Seq != ev.Seq || !gotEv.At.Equal(ev.At) ||
		gotEv.Tenant != ev.Tenant || gotEv.BadTenant != "" || gotSt.Attempts != st.Attempts || !gotSt.First.Equal(st.First) ||
		!gotSt.Last.Equal(st.Last) || gotSt.Status != st.Status || gotSt.Error != st.Error {
		t.Fatalf("read back\n event %+v\n state %+v\nwant\n event %+v\n state %+v", gotEv, gotSt, ev, st)
	}
	for h, want := range map[string]string{
		jetstream.HdrContentType: "application/json", jetstream.HdrOrderingKey: "order-7",
		"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", // in any case on the event
	} {
		if got := due.Header.Get(h); got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	if string(due.Data) != `{"n":1}` {
		t.Fatalf("payload %s", due.Data)
	}

	at := published.Add(time.Hour)
	retry := TaskMsg("ep", &ev, st, nil, src, at)
	if retry.Subject != jetstream.SchedPrefix+"ep.42" || retry.Header.Get(hdrTarget) != jetstream.TasksPrefix+"ep" ||
		retry.Header.Get(hdrSchedule) != "@at "+at.Format(time.RFC3339Nano) {
		t.Fatalf("a retry: subject %q, target %q, schedule %q", retry.Subject, retry.Header.Get(hdrTarget), retry.Header.Get(hdrSchedule))
	}
	if retry.Header.Get(jetstream.HdrMsgID) != due.Header.Get(jetstream.HdrMsgID) {
		t.Fatal("the same attempt of a delivery stored under two Nats-Msg-Ids")
	}
	st.Attempts++
	if next := TaskMsg("ep", &ev, st, nil, src, at); next.Header.Get(jetstream.HdrMsgID) == retry.Header.Get(jetstream.HdrMsgID) {
		t.Fatal("the next attempt's task has the same Nats-Msg-Id: JetStream would drop it as a duplicate")
	}
}

// A task stored without its publish time (an earlier hookjet's) takes the
// time it was stored at.
func TestTaskWithoutPublishTimeTakesItsStoredTime(t *testing.T) {
	h := nats.Header{}
	h.Set(jetstream.HdrEventID, "e")
	stored := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if ev, _ := TaskOf(h, stored); !ev.At.Equal(stored) {
		t.Fatalf("At = %s, want %s", ev.At, stored)
	}
}
