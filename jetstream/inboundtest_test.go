package jetstream

import (
	"strings"
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// inbound test --wait-consumer says what is missing and what to do, not
// NATS's "API error: code=404 err_code=10014".
func TestCheckInboundConsumerSaysWhatIsMissing(t *testing.T) {
	js := startJS(t)
	for _, tt := range []struct{ name, want string }{
		{"billing", "stream HOOKJET_INBOUND does not exist"},
		{"bad.name", "is not a consumer name"},
	} {
		err := checkInboundConsumer(t.Context(), js, tt.name)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "err_code") {
			t.Errorf("consumer %q: %v, want %q in words", tt.name, err, tt.want)
		}
	}
	if _, err := js.CreateStream(t.Context(), natsjs.StreamConfig{Name: InboundStream, Subjects: []string{InboundPrefix + ">"}}); err != nil {
		t.Fatal(err)
	}
	err := checkInboundConsumer(t.Context(), js, "billing")
	if err == nil || !strings.Contains(err.Error(), `no consumer "billing" on stream HOOKJET_INBOUND`) || strings.Contains(err.Error(), "err_code") {
		t.Errorf("missing consumer: %v", err)
	}
	if _, err := js.CreateOrUpdateConsumer(t.Context(), InboundStream, natsjs.ConsumerConfig{Durable: "billing"}); err != nil {
		t.Fatal(err)
	}
	if err := checkInboundConsumer(t.Context(), js, "billing"); err != nil {
		t.Errorf("existing consumer: %v", err)
	}
}
