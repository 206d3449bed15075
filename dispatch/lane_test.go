package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// publishKeyed stores an event with ordering key key.
func (r *rig) publishKeyed(typ, id, key string) {
	r.t.Helper()
	msg := nats.NewMsg(jetstream.EventsPrefix + typ)
	msg.Header.Set(jetstream.HdrMsgID, id)
	msg.Header.Set(jetstream.HdrOrderingKey, key)
	msg.Data = []byte(`{"id":"` + id + `"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.node.JetStream().PublishMsg(ctx, msg); err != nil {
		r.t.Fatalf("publish %s: %v", id, err)
	}
}

// orderedTo is an endpoint to rcv that orders by key.
func orderedTo(id string, rcv *receiver, onDeadLetter string) config.Endpoint {
	ep := endpointTo(id, rcv)
	ep.Ordering = "key"
	ep.OrderingOnDeadLetter = onDeadLetter
	return ep
}

// arrivals returns, per key (the id's part before "-"), the ids of the 2xx
// requests path took, in the order they arrived.
func (rc *receiver) arrivals(path string) map[string][]string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string][]string{}
	for _, g := range rc.got {
		if g.path == path {
			key, _, _ := strings.Cut(g.id, "-")
			out[key] = append(out[key], g.id)
		}
	}
	return out
}

// inOrder fails when a key's deliveries did not arrive as 0, 1, ..., n-1.
func inOrder(t *testing.T, got map[string][]string, keys, n int) {
	t.Helper()
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		want := make([]string, n)
		for i := range n {
			want[i] = fmt.Sprintf("%s-%d", key, i)
		}
		if fmt.Sprint(got[key]) != fmt.Sprint(want) {
			t.Errorf("key %s arrived as %v, want %v", key, got[key], want)
		}
	}
}

// failKey has rcv answer 500 to key's events while the flag it returns
// is set (it starts set), 204 otherwise.
func failKey(rcv *receiver, key string) *atomic.Bool {
	var failing atomic.Bool
	failing.Store(true)
	rcv.setAnswer(func(_, id string, _ int) (int, http.Header) {
		if strings.HasPrefix(id, key+"-") && failing.Load() {
			return http.StatusInternalServerError, nil
		}
		return http.StatusNoContent, nil
	})
	return &failing
}

// publishKeys publishes per events of each of keys keys (k<n>-<i>, key
// k<n>), the keys taking turns, and returns their deliveries to endpoint
// ord as the receiver records them.
func (r *rig) publishKeys(keys, per int) []string {
	var want []string
	for i := range per {
		for k := range keys {
			id := fmt.Sprintf("k%d-%d", k, i)
			r.publishKeyed("order.updated", id, fmt.Sprintf("k%d", k))
			want = append(want, "ord "+id)
		}
	}
	return want
}

// Two processes share the fan-out; whichever serves the endpoint's view
// shows the held key (the owner answers the other).
func TestOrderedKeysGoInPublishOrderWhileOneKeyFails(t *testing.T) {
	rcv := newReceiver(t)
	ep := orderedTo("ord", rcv, "")
	ep.Retry.MaxAttempts = 100
	node, cfg := sharedNode(t)
	r := sharing(t, node, cfg, []config.Endpoint{ep})
	r2 := sharing(t, node, cfg, []config.Endpoint{ep})
	failing := failKey(rcv, "k0")
	const keys, per = 20, 10
	want := r.publishKeys(keys, per)
	// Every other key is delivered while k0 fails, and k0 shows as held.
	eventually(t, "the other keys delivered", 20*time.Second, func() bool {
		return len(rcv.delivered()) == (keys-1)*per
	})
	if got := rcv.requests("ord", "k0-1"); got != 0 {
		t.Fatalf("k0-1 attempted %d times while k0-0 had not been delivered", got)
	}
	for _, p := range []*rig{r, r2} {
		h := p.status("ord").HeldKeys
		if h == nil || h.Count != 1 || h.Why["retrying"] != 1 || len(h.Keys) != 1 || h.Keys[0].Key != "k0" || h.Keys[0].EventID != "k0-0" || h.Keys[0].Attempts == 0 {
			t.Fatalf("held keys: %+v, want k0 retrying k0-0", h)
		}
	}
	failing.Store(false)
	rcv.waitDelivered(want, 20*time.Second)
	inOrder(t, rcv.arrivals("ord"), keys, per)
	eventually(t, "no key held", 5*time.Second, func() bool {
		return r.status("ord").HeldKeys == nil && r2.status("ord").HeldKeys == nil
	})
}

func TestOrderedKeyHoldsAfterADeadLetterUntilReplayed(t *testing.T) {
	rcv := newReceiver(t)
	r := newRig(t, []config.Endpoint{orderedTo("ord", rcv, "hold")}, nil)
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
	eventually(t, "k0 held by its dead letter", 10*time.Second, func() bool {
		h := r.d.lane.Held("ord")
		return h != nil && h.Why["dead_letter"] == 1
	})
	time.Sleep(500 * time.Millisecond)
	if n := rcv.requests("ord", "k0-1"); n != 0 {
		t.Fatalf("k0-1 attempted %d times while k0 was held", n)
	}
	refuse.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.d.Queries().Replay(ctx, api.ReplayRequest{Endpoint: "ord", IDs: []string{"k0-0"}}); err != nil {
		t.Fatal(err)
	}
	rcv.waitDelivered([]string{"ord k0-0", "ord k0-1", "ord k0-2", "ord k1-0"}, 10*time.Second)
	inOrder(t, rcv.arrivals("ord"), 1, 3)
}

func TestOrderedKeySkipsADeadLetterAndADiscardReleasesAHold(t *testing.T) {
	for _, policy := range []string{"skip", "hold"} {
		t.Run(policy, func(t *testing.T) {
			rcv := newReceiver(t)
			r := newRig(t, []config.Endpoint{orderedTo("ord", rcv, policy)}, nil)
			rcv.setAnswer(func(_, id string, _ int) (int, http.Header) {
				if id == "k0-0" {
					return http.StatusBadRequest, nil
				}
				return http.StatusNoContent, nil
			})
			for i := range 3 {
				r.publishKeyed("order.updated", fmt.Sprintf("k0-%d", i), "k0")
			}
			if policy == "hold" {
				eventually(t, "k0 held", 10*time.Second, func() bool { h := r.d.lane.Held("ord"); return h != nil && h.Why["dead_letter"] == 1 })
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, _, err := jetstream.DiscardDLQ(ctx, r.node.JetStream(), jetstream.DLQFilter{Endpoint: "ord"}, false, func(e jetstream.DLQEntry) {
					if err := r.d.ReleaseHold(ctx, e.Endpoint, e.EventID); err != nil {
						t.Error(err)
					}
				}); err != nil {
					t.Fatal(err)
				}
			}
			rcv.waitDelivered([]string{"ord k0-1", "ord k0-2"}, 10*time.Second)
			if got := rcv.arrivals("ord")["k0"]; fmt.Sprint(got) != "[k0-1 k0-2]" {
				t.Fatalf("arrived %v", got)
			}
		})
	}
}

// Three processes share the fan-out, so the entries of a key reach the lane
// out of order; the lane's owner is stopped mid-run and another takes over.
// Every key still arrives in publish order, and nothing is lost.
func TestOrderedKeysKeepOrderAcrossProcessesAndAnOwnerChange(t *testing.T) {
	rcv := newReceiver(t)
	node, cfg := sharedNode(t)
	ep := orderedTo("ord", rcv, "")
	ep.Retry.MaxAttempts = 100
	var ps []*rig
	for range 3 {
		ps = append(ps, sharing(t, node, cfg, []config.Endpoint{ep}))
	}
	var slow atomic.Bool
	slow.Store(true)
	rcv.setAnswer(func(_, id string, n int) (int, http.Header) {
		if strings.HasPrefix(id, "k0-") && n == 1 {
			return http.StatusServiceUnavailable, nil // every k0 event fails once
		}
		if slow.Load() {
			time.Sleep(2 * time.Millisecond)
		}
		return http.StatusNoContent, nil
	})
	const keys, per = 20, 15
	var want []string
	// A key's events one after another: the processes' fan-outs append
	// them to the lane concurrently, often out of order.
	publish := func(from, to int) {
		for k := range keys {
			for i := from; i < to; i++ {
				id := fmt.Sprintf("k%d-%d", k, i)
				ps[(i+k)%3].publishKeyed("order.updated", id, fmt.Sprintf("k%d", k))
				want = append(want, "ord "+id)
			}
		}
	}
	publish(0, 5)
	var owner *rig
	eventually(t, "one process owns the lane", 10*time.Second, func() bool {
		for _, p := range ps {
			if p.d.lane.Owns() {
				owner = p
			}
		}
		return owner != nil
	})
	eventually(t, "deliveries under way", 10*time.Second, func() bool { return len(rcv.delivered()) > 20 })
	owner.d.Stop(5 * time.Second)
	publish(5, per)
	slow.Store(false)
	rcv.waitDelivered(want, 30*time.Second)
	inOrder(t, rcv.arrivals("ord"), keys, per)
}

// An ordered endpoint that is disabled still dead-letters its keyed
// deliveries once they pass retry.max_age, as expired, in their key's order.
func TestOrderedDeliveriesExpireWhileTheEndpointIsDisabled(t *testing.T) {
	rcv := newReceiver(t)
	ep := orderedTo("ord", rcv, "")
	ep.Retry.MaxAge = time.Second
	r := newRig(t, []config.Endpoint{ep}, nil)
	if err := r.d.SetDisabled(ctx5(t), "ord", true, "test"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r.publishKeyed("order.updated", fmt.Sprintf("k0-%d", i), "k0")
	}
	eventually(t, "every delivery dead-lettered as expired", 15*time.Second, func() bool {
		return fmt.Sprint(r.deadLetters("ord")) == "[k0-0 expired k0-1 expired k0-2 expired]"
	})
	if n := len(rcv.delivered()); n != 0 {
		t.Fatalf("%d delivered to a disabled endpoint", n)
	}
}

// A rate limit and a 429 with Retry-After hold the whole endpoint, not a
// key's turn: every key still arrives in publish order.
func TestOrderedKeysKeepOrderThroughRateLimitAndRetryAfter(t *testing.T) {
	rcv := newReceiver(t)
	ep := orderedTo("ord", rcv, "")
	ep.RateLimit.RPS, ep.RateLimit.Burst = 200, 5
	ep.Retry.MaxAttempts = 20
	r := newRig(t, []config.Endpoint{ep}, nil)
	rcv.setAnswer(func(_, id string, n int) (int, http.Header) {
		if id == "k3-2" && n == 1 {
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}
		}
		return http.StatusNoContent, nil
	})
	const keys, per = 10, 10
	var want []string
	for k := range keys {
		for i := range per {
			id := fmt.Sprintf("k%d-%d", k, i)
			r.publishKeyed("order.updated", id, fmt.Sprintf("k%d", k))
			want = append(want, "ord "+id)
		}
	}
	rcv.waitDelivered(want, 30*time.Second)
	inOrder(t, rcv.arrivals("ord"), keys, per)
	if n := rcv.requests("ord", "k3-2"); n != 2 {
		t.Fatalf("k3-2 requested %d times, want 2 (a 429, then after Retry-After)", n)
	}
}

// A full lane refuses an ordered delivery: it is dead-lettered as overflow,
// not dropped and not retried for ever.
func TestFullLaneDeadLettersOverflow(t *testing.T) {
	rcv := newReceiver(t)
	r := newRig(t, []config.Endpoint{orderedTo("ord", rcv, "")}, nil)
	if err := r.d.SetDisabled(ctx5(t), "ord", true, "test"); err != nil {
		t.Fatal(err)
	}
	ctx := ctx5(t)
	st, err := r.node.JetStream().Stream(ctx, jetstream.LaneStream)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	sc.MaxMsgs = 2
	if _, err := r.node.JetStream().UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r.publishKeyed("order.updated", fmt.Sprintf("k0-%d", i), "k0")
	}
	// The fan-out's workers append concurrently: whichever comes third.
	eventually(t, "one dead-lettered as overflow", 10*time.Second, func() bool {
		dl := r.deadLetters("ord")
		return len(dl) == 1 && strings.HasSuffix(dl[0], " overflow")
	})
}
