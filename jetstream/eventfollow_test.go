package jetstream

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/publish"
)

// TestEventIndexListsResumesAndForgetsExpiredEvents stores events, lists
// them from the index (tenant and key from the headers, size from the
// headers-only consumer, an event without Nats-Msg-Id under its seq_ id),
// stops the index, stores more while it is down, starts it again on the
// same file, and then lets the stream's MaxAge drop every event: the index
// lists none of them and forgets them.
func TestEventIndexListsResumesAndForgetsExpiredEvents(t *testing.T) {
	js, p := startEvents(t)
	ctx := context.Background()
	store := func(from, to int) {
		t.Helper()
		evs := make([]publish.Event, 0, to-from)
		for i := from; i < to; i++ {
			tenant := ""
			if i%2 == 0 {
				tenant = "acme"
			}
			evs = append(evs, publish.Event{ID: fmt.Sprintf("evt_%d", i), Type: "order.created", Tenant: tenant, Key: "k", Data: []byte(`{"n":1}`)})
		}
		for _, r := range p.Store(ctx, evs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	store(0, 10)
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: EventsPrefix + "plain", Data: []byte("xyz")}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "event-index.db")
	x, err := FollowEvents(js, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	page, err := x.Page(ctx, api.EventQuery{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	first := page.Events[0]
	if len(page.Events) != 5 || page.Next != "7" || first.ID != "seq_11" || first.Type != "plain" || first.Size != 3 || first.Seq != 11 {
		t.Fatalf("first page: %+v, next %q; want 5 events from seq_11 (plain, 3 bytes), next 7", page.Events, page.Next)
	}
	if e := page.Events[1]; e.ID != "evt_9" || e.Tenant != "" || e.Key != "k" || e.Size != 7 || e.PublishedAt.IsZero() {
		t.Fatalf("second event: %+v", e)
	}
	acme, err := x.Page(ctx, api.EventQuery{Tenant: "acme", Limit: 100})
	if err != nil || len(acme.Events) != 5 || acme.Events[0].ID != "evt_8" || acme.Next != "" {
		t.Fatalf("acme's page: %+v, %v; want evt_8, 6, 4, 2, 0", acme, err)
	}
	x.Close()

	store(10, 20) // while no process follows
	x, err = FollowEvents(js, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	all, err := x.Page(ctx, api.EventQuery{Limit: 1000})
	if err != nil || len(all.Events) != 21 || all.Events[0].ID != "evt_19" {
		t.Fatalf("after a restart of the index: %d events from %v, %v; want 21 from evt_19", len(all.Events), all.Events[0], err)
	}
	if seq, found, err := x.Lookup(ctx, "evt_15"); err != nil || !found || seq != 17 {
		t.Fatalf("evt_15: seq %d, %v, %v; want 17", seq, found, err)
	}

	// Every event expires.
	st, err := js.Stream(ctx, EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxAge, cfg.Duplicates = time.Second, time.Second
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() bool {
		pg, err := x.Page(ctx, api.EventQuery{})
		return err == nil && len(pg.Events) == 0
	}, "the expired events to leave the list")
	checkFor(t, 30*time.Second, func() bool { return x.Stats().InMemory == 0 }, "the index to forget the expired events")
	if _, found, _ := x.Lookup(ctx, "evt_15"); found {
		t.Fatal("an expired event is still found by id")
	}
}
