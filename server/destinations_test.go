package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookjet/hookjet/deliver"
	"github.com/hookjet/hookjet/destination"
)

type fixed destination.Result

func (f fixed) Send(context.Context, destination.Request) destination.Result {
	return destination.Result(f)
}

func TestDestinationMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newDestinationMetrics(reg)
	open := m.wrap("kafka", func(destination.Endpoint) (destination.Destination, error) {
		return fixed{Class: destination.RateLimited}, nil
	})
	d, err := open(destination.Endpoint{ID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	d.Send(context.Background(), destination.Request{})
	d.Send(context.Background(), destination.Request{})
	want := `
# HELP hookjet_destination_attempts_total Delivery attempts by destination type (webhook, nats, kafka, rabbitmq) and outcome class.
# TYPE hookjet_destination_attempts_total counter
hookjet_destination_attempts_total{class="auth",destination="kafka"} 0
hookjet_destination_attempts_total{class="gone",destination="kafka"} 0
hookjet_destination_attempts_total{class="permanent",destination="kafka"} 0
hookjet_destination_attempts_total{class="rate_limited",destination="kafka"} 2
hookjet_destination_attempts_total{class="rejected",destination="kafka"} 0
hookjet_destination_attempts_total{class="success",destination="kafka"} 0
hookjet_destination_attempts_total{class="transient",destination="kafka"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "hookjet_destination_attempts_total"); err != nil {
		t.Error(err)
	}
}

// The guard's dialer refuses a loopback address with destination.ErrRefused
// and the guard's words.
func TestGuardDialer(t *testing.T) {
	d := guardDialer(deliver.NewGuard(false, nil))
	_, err := d.DialContext(context.Background(), "tcp", "127.0.0.1:9")
	if err == nil || !strings.Contains(err.Error(), "refused: 127.0.0.1 is a loopback address") {
		t.Fatalf("dial: %v", err)
	}
	if !errors.Is(err, destination.ErrRefused) {
		t.Fatalf("%v is not destination.ErrRefused", err)
	}
}
