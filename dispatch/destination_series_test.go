package dispatch

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dispatch/settle"
)

// Each endpoint with series of its own has one hookjet_endpoint_destination
// series naming its destination type; those past metrics.max_endpoint_series
// have none, so the series stay bounded.
func TestEndpointDestinationSeriesBounded(t *testing.T) {
	rc := newReceiver(t)
	r := newRig(t, []config.Endpoint{endpointTo("first", rc), endpointTo("second", rc), endpointTo("third", rc)}, func(c *config.Config) {
		c.Metrics.MaxEndpointSeries = 2
	})
	m := r.d.o.Metrics
	if n := testutil.CollectAndCount(m.Destination); n != 2 {
		t.Fatalf("%d hookjet_endpoint_destination series with metrics.max_endpoint_series 2, want 2", n)
	}
	owned := 0
	for _, id := range []string{"first", "second", "third"} {
		if l := r.d.series.Label(id); l != settle.OtherSeries {
			owned++
			if v := testutil.ToFloat64(m.Destination.WithLabelValues(id, config.DestinationWebhook)); v != 1 {
				t.Fatalf("hookjet_endpoint_destination{endpoint=%q,destination=\"webhook\"} = %v, want 1", id, v)
			}
		}
	}
	if owned != 2 {
		t.Fatalf("%d endpoints with series of their own, want 2", owned)
	}
	if n := testutil.CollectAndCount(m.Destination); n != 2 {
		t.Fatalf("%d series after reading them, want 2", n)
	}
}
