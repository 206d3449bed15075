package dispatch

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookjet/hookjet/config"
)

// An endpoint's filter and transform on the delivery path: the filter
// refuses an event with no delivery and no record, counted; the transform
// reshapes the body the receiver gets, signed over what it got; a
// transform that throws dead-letters the delivery as transform with the
// script's error and no attempt; one that cancels sends nothing and
// settles it.
func TestFilterAndTransformOnTheDeliveryPath(t *testing.T) {
	rc := newReceiver(t)
	vip := endpointTo("vip", rc, "order.*")
	vip.Filter = `data.total > 100`
	shaped := endpointTo("shaped", rc, "order.*")
	shaped.Transform = `function handler(w) { w.payload = {amount: w.payload.total}; return w }`
	broken := endpointTo("broken", rc, "order.*")
	broken.Transform = "function handler(w) {\n  throw new Error(\"no way\")\n}"
	cancel := endpointTo("cancel", rc, "order.*")
	cancel.Transform = `function handler(w) { w.cancel = w.payload.total < 100; return w }`
	r := newRig(t, []config.Endpoint{vip, shaped, broken, cancel}, nil)

	r.publish("order.created", "small", "", `{"total":5}`)
	r.publish("order.created", "big", "", `{"total":500}`)
	rc.waitDelivered([]string{"vip big", "shaped small", "shaped big", "cancel big"}, 15*time.Second)
	rc.checkSigned()
	if b := rc.bodyOf("shaped", "big"); b != `{"amount":500}` {
		t.Fatalf("the transformed body = %s", b)
	}
	if b := rc.bodyOf("vip", "big"); b != `{"total":500}` {
		t.Fatalf("an endpoint without a transform got %s", b)
	}
	eventually(t, "broken's deliveries are dead-lettered as transform", 10*time.Second, func() bool {
		return slices.Equal(r.deadLetters("broken"), []string{"big transform", "small transform"})
	})
	r.settled(10 * time.Second)
	if n := rc.requests("broken", "big") + rc.requests("cancel", "small"); n != 0 {
		t.Fatalf("%d requests for deliveries the transform failed or cancelled", n)
	}
	if got := testutil.ToFloat64(r.d.o.Metrics.Filtered.WithLabelValues("vip")); got != 1 {
		t.Fatalf("hookjet_filtered_total{endpoint=vip} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(r.d.o.Metrics.FilterErrors.WithLabelValues("vip")); got != 0 {
		t.Fatalf("hookjet_filter_errors_total{endpoint=vip} = %v, want 0", got)
	}
	if h, ok := r.breakers.Health("broken"); ok && h.ConsecutiveFailures != 0 {
		t.Fatalf("a failing transform counted against broken's breaker: %+v", h)
	}
}
