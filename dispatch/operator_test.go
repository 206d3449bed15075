package dispatch

import (
	"slices"
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
)

// Discard drops what waits for an endpoint, counted by the queries, and
// leaves nothing for its drain.
func TestDiscardDropsAndCountsWhatWaits(t *testing.T) {
	rc := newReceiver(t)
	r := newRig(t, []config.Endpoint{endpointTo("gone", rc), endpointTo("kept", rc)}, nil)
	if err := r.d.SetDisabled(ctx5(t), "gone", true, "deleting"); err != nil {
		t.Fatal(err)
	}
	evs := ids("g", 4)
	for _, id := range evs {
		r.publish("order.created", id, "", `{}`)
	}
	var want []string
	for _, id := range evs {
		want = append(want, "kept "+id)
	}
	rc.waitDelivered(slices.Clone(want), 15*time.Second)
	r.settled(10 * time.Second)
	eventually(t, "four parked deliveries counted", 10*time.Second, func() bool { return r.status("gone").Pending == 4 })
	n, err := r.d.Operator().Discard(ctx5(t), "gone")
	if err != nil || n != 4 {
		t.Fatalf("Discard = %d, %v; want 4", n, err)
	}
	if left, err := r.d.Queries().Tasks(ctx5(t), "gone"); err != nil || left != 0 {
		t.Fatalf("tasks left: %d, %v", left, err)
	}
}
