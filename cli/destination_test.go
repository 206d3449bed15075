package cli

import (
	"flag"
	"testing"

	"github.com/hookjet/hookjet/api"
)

func TestDestinationText(t *testing.T) {
	off := false
	for _, tt := range []struct {
		s    *api.EndpointSettings
		want string
	}{
		{nil, "webhook"},
		{&api.EndpointSettings{Destination: api.Destination{Type: "webhook"}}, "webhook"},
		{&api.EndpointSettings{Destination: api.Destination{Type: "nats", URL: "nats://***@n:4222", Subject: "orders.{type}", JetStream: &off}}, "nats nats://***@n:4222 subject orders.{type} core NATS (at most once)"},
		{&api.EndpointSettings{Destination: api.Destination{Type: "kafka", Brokers: []string{"k1:9092"}, Topic: "t", SASLMechanism: "PLAIN"}}, "kafka k1:9092 topic t sasl PLAIN"},
		{&api.EndpointSettings{Destination: api.Destination{Type: "rabbitmq", URL: "amqp://***@r/", Exchange: "hooks", RoutingKey: "{type}"}}, "rabbitmq amqp://***@r/ exchange hooks routing key {type}"},
	} {
		if got := destinationText(tt.s); got != tt.want {
			t.Errorf("destinationText = %q, want %q", got, tt.want)
		}
	}
}

func TestDestinationFlag(t *testing.T) {
	fs := flag.NewFlagSet("endpoints add", flag.ContinueOnError)
	in := map[string]any{}
	if err := destinationFlag(fs, `{"type":"kafka","brokers":["k:9092"],"topic":"t"}`, in); err != nil {
		t.Fatal(err)
	}
	if d, ok := in["destination"].(map[string]any); !ok || d["type"] != "kafka" {
		t.Fatalf("%v", in)
	}
	if err := destinationFlag(fs, `{not json`, map[string]any{}); err == nil {
		t.Fatal("bad JSON accepted")
	}
}
