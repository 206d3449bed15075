package console

import (
	"testing"

	"github.com/hookjet/hookjet/api"
)

func TestEndpointWhere(t *testing.T) {
	for _, tt := range []struct {
		e    endpoint
		typ  string
		want string
	}{
		{endpoint{URL: "https://crm.example.com/hooks"}, "webhook", "https://crm.example.com/hooks"},
		{endpoint{URL: "https://x/", Settings: &settings{Destination: api.Destination{Type: "webhook"}}}, "webhook", "https://x/"},
		{endpoint{Settings: &settings{Destination: api.Destination{Type: "nats", URL: "nats://***@n:4222", Subject: "orders.{type}"}}}, "nats", "nats nats://***@n:4222 subject orders.{type}"},
		{endpoint{Settings: &settings{Destination: api.Destination{Type: "kafka", Brokers: []string{"k1:9092", "k2:9092"}, Topic: "orders"}}}, "kafka", "kafka k1:9092,k2:9092 topic orders"},
		{endpoint{Settings: &settings{Destination: api.Destination{Type: "rabbitmq", URL: "amqp://***@r/", Exchange: "hooks", RoutingKey: "orders.{type}"}}}, "rabbitmq", `rabbitmq amqp://***@r/ exchange "hooks" routing key "orders.{type}"`},
	} {
		if got := tt.e.DestinationType(); got != tt.typ {
			t.Errorf("DestinationType = %q, want %q", got, tt.typ)
		}
		if got := tt.e.Where(); got != tt.want {
			t.Errorf("Where = %q, want %q", got, tt.want)
		}
	}
}
