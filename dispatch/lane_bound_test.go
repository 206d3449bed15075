package dispatch

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
)

// TestLaneBurstOfHealthyEndpointPassesMaxBacklog: an ordered endpoint that
// delivers (its last success is recent) takes a burst far past its
// max_backlog into the lane and delivers every event in its key's order,
// none dead-lettered as overflow, as an unordered endpoint's burst of busy
// tasks is; TestProbeDeadOrderedEndpointFillsLaneForOthers is the other
// side (an endpoint that never delivered counts every entry).
func TestLaneBurstOfHealthyEndpointPassesMaxBacklog(t *testing.T) {
	rcv := newReceiver(t)
	ord := orderedTo("ord", rcv, "")
	ord.MaxBacklog = 5
	ord.MaxInFlight = 2
	r := newRig(t, []config.Endpoint{ord}, nil)
	rcv.setAnswer(func(_, _ string, _ int) (int, http.Header) {
		time.Sleep(5 * time.Millisecond) // slower than the burst comes
		return http.StatusNoContent, nil
	})
	r.publishKeyed("order.created", "w-0", "w")
	rcv.waitDelivered([]string{"ord w-0"}, 15*time.Second)

	const keys, perKey = 4, 15
	var want []string
	for i := range perKey {
		for k := range keys {
			id := fmt.Sprintf("k%d-%d", k, i)
			r.publishKeyed("order.created", id, "k"+strconv.Itoa(k))
			want = append(want, "ord "+id)
		}
	}
	rcv.waitDelivered(append(want, "ord w-0"), 30*time.Second)
	if dl := r.deadLetters("ord"); len(dl) > 0 {
		t.Errorf("a burst of %d events to an ordered endpoint that delivers was dead-lettered: %v", keys*perKey, dl)
	}
	for k, got := range rcv.arrivals("ord") {
		for i := 1; i < len(got); i++ {
			if a, b := seqOf(got[i-1]), seqOf(got[i]); a >= b {
				t.Errorf("key %s: %s arrived before %s", k, got[i-1], got[i])
			}
		}
	}
}

// seqOf is the number after the "-" of a test event id.
func seqOf(id string) int {
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == '-' {
			n, _ := strconv.Atoi(id[i+1:])
			return n
		}
	}
	return -1
}
