package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
)

// Keys held behind a dead letter (ordering_on_dead_letter: hold) are
// visible in every view, whichever process serves it: their deliveries
// count as pending (the endpoint's and the summary's, with the oldest
// age), the endpoint's and the summary's waits name the held keys, and the
// held key shows the attempts its dead letter had. A replay lets them go
// and the views empty again.
func TestHeldKeysCountAsPendingAndWaiting(t *testing.T) {
	rcv := newReceiver(t)
	ep := orderedTo("ord", rcv, "hold")
	node, cfg := sharedNode(t)
	r := sharing(t, node, cfg, []config.Endpoint{ep})
	r2 := sharing(t, node, cfg, []config.Endpoint{ep})
	var refuse atomic.Bool
	refuse.Store(true)
	rcv.setAnswer(func(_, id string, _ int) (int, http.Header) {
		if id == "k0-0" && refuse.Load() {
			return http.StatusBadRequest, nil // permanent: dead-lettered at once
		}
		return http.StatusNoContent, nil
	})
	for i := range 3 {
		r.publishKeyed("order.updated", fmt.Sprintf("k0-%d", i), "k0")
	}
	r.publishKeyed("order.updated", "k1-0", "k1")
	rcv.waitDelivered([]string{"ord k1-0"}, 10*time.Second)
	// Held once its marker is stored; k0-0's own entry goes a moment later.
	eventually(t, "k0 held by its dead letter", 10*time.Second, func() bool {
		st := r.status("ord")
		return st.HeldKeys != nil && st.HeldKeys.Why[api.HeldDeadLetter] == 1 && st.Pending <= 2
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, p := range []*rig{r, r2} {
		st := p.status("ord")
		if st.Pending != 2 {
			t.Errorf("process %d: pending %d while k0-1 and k0-2 wait behind k0's dead letter, want 2", i, st.Pending)
		}
		w, ok := api.Find(st.Waiting, api.WaitKeysHeld)
		if !ok || !strings.Contains(w.Detail, "1 key") || !strings.Contains(w.Detail, "1 dead_letter") {
			t.Errorf("process %d: waiting %+v, want the held key named (1 key, why: 1 dead_letter)", i, st.Waiting)
		}
		if h := st.HeldKeys; h == nil || len(h.Keys) != 1 || h.Keys[0].EventID != "k0-0" || h.Keys[0].Attempts != rcv.requests("ord", "k0-0") {
			t.Errorf("process %d: held keys %+v, want k0 at k0-0 with its %d attempts", i, h, rcv.requests("ord", "k0-0"))
		}
		page, _, err := p.d.Queries().EndpointPage(ctx, "", "", 0)
		if err != nil || len(page) != 1 || page[0].Pending != 2 {
			t.Errorf("process %d: the endpoint list says %+v (%v), want pending 2", i, page, err)
		}
		sum, err := p.d.Queries().Summary(ctx)
		if err != nil || sum.Pending != 2 || sum.OldestPendingAgeSeconds <= 0 {
			t.Errorf("process %d: summary pending %d, oldest %.3fs (%v), want 2 and an age", i, sum.Pending, sum.OldestPendingAgeSeconds, err)
		}
		waits, n, err := p.d.Queries().Waiting(ctx)
		if _, ok := api.Find(waits, api.WaitKeysHeld); err != nil || n != 1 || !ok {
			t.Errorf("process %d: the summary's waits %+v (%d endpoints, %v), want ord's held key", i, waits, n, err)
		}
	}
	refuse.Store(false)
	if _, err := r.d.Queries().Replay(ctx, api.ReplayRequest{Endpoint: "ord", IDs: []string{"k0-0"}}); err != nil {
		t.Fatal(err)
	}
	rcv.waitDelivered([]string{"ord k0-0", "ord k0-1", "ord k0-2", "ord k1-0"}, 10*time.Second)
	eventually(t, "nothing pending or held", 5*time.Second, func() bool {
		for _, p := range []*rig{r, r2} {
			st := p.status("ord")
			if st.Pending != 0 || st.HeldKeys != nil || len(st.Waiting) != 0 {
				return false
			}
		}
		return true
	})
}

// Whether any endpoint orders by key is a count kept as endpoints come,
// change and go, not a walk over every endpoint (the summary asks it every
// few seconds, at 100,000 endpoints).
func TestAnyOrderedFollowsTheTable(t *testing.T) {
	rcv := newReceiver(t)
	plain := endpointTo("plain", rcv, "order.created")
	r := newRig(t, []config.Endpoint{plain}, nil)
	apply := func(eps ...config.Endpoint) {
		t.Helper()
		next := *r.cfg
		next.Endpoints = eps
		if err := r.d.src.Apply(ctx5(t), &next); err != nil {
			t.Fatal(err)
		}
	}
	if r.d.anyOrdered(nil) {
		t.Fatal("one plain endpoint: an ordered one reported")
	}
	ord := orderedTo("ord", rcv, "hold")
	apply(plain, ord)
	if !r.d.anyOrdered(nil) || r.d.ordered.Load() != 1 {
		t.Fatalf("an ordered endpoint added: anyOrdered %v, count %d", r.d.anyOrdered(nil), r.d.ordered.Load())
	}
	ordToo := plain
	ordToo.Ordering = config.OrderingKey
	apply(ordToo, ord) // plain now orders too
	if r.d.ordered.Load() != 2 {
		t.Fatalf("two ordered endpoints: count %d", r.d.ordered.Load())
	}
	apply(plain) // ord removed, plain back to unordered
	if r.d.anyOrdered(nil) || r.d.ordered.Load() != 0 {
		t.Fatalf("no ordered endpoint left: anyOrdered %v, count %d", r.d.anyOrdered(nil), r.d.ordered.Load())
	}
}
