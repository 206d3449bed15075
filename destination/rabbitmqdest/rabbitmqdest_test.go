package rabbitmqdest_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/destination/rabbitmqdest"
	"github.com/hookjet/hookjet/internal/rabbittest"
	"github.com/hookjet/hookjet/signature"
	"github.com/hookjet/hookjet/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func endpoint(t *testing.T, id string, opts map[string]any) destination.Endpoint {
	t.Helper()
	k, err := signature.DecodeSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	return destination.Endpoint{ID: id, Type: rabbitmqdest.Type, Signer: signature.NewSigner(k), Timeout: 5 * time.Second, Options: raw}
}

// setup declares a durable topic exchange "hooks" and a queue "orders"
// bound to it by "orders.#".
func setup(t *testing.T, url string) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare("hooks", "topic", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("orders", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("orders", "orders.#", "hooks", false, nil); err != nil {
		t.Fatal(err)
	}
	return ch
}

func get(t *testing.T, ch *amqp.Channel, queue string) amqp.Delivery {
	t.Helper()
	for range 50 {
		m, ok, err := ch.Get(queue, true)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return m
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("nothing in %s", queue)
	return amqp.Delivery{}
}

func verify(t *testing.T, m amqp.Delivery) map[string][]string {
	t.Helper()
	h := map[string][]string{}
	for k, v := range m.Headers {
		s, ok := v.(string)
		if !ok {
			t.Errorf("header %s is %T, want a string", k, v)
		}
		h[k] = []string{s}
	}
	v, err := webhook.NewVerifier([]string{secret})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifyMessage(h, m.Body); err != nil {
		t.Errorf("signature: %v", err)
	}
	return h
}

func TestRabbitMQ(t *testing.T) {
	node := rabbittest.Start(t)
	ch := setup(t, node.URL())
	o := rabbitmqdest.New(rabbitmqdest.Config{})
	defer o.Close()
	ctx := context.Background()
	d, err := o.Open(endpoint(t, "ep1", map[string]any{"type": "rabbitmq", "url": node.URL(), "exchange": "hooks", "routing_key": "orders.{tenant}.{type}"}))
	if err != nil {
		t.Fatal(err)
	}
	req := destination.Request{EventID: "evt_1", EventType: "order.created", Tenant: "acme", OrderingKey: "o-7", Payload: []byte(`{"order":42}`)}
	res := d.Send(ctx, req)
	if res.Class != destination.Success || !strings.Contains(string(res.Response), `routing key "orders.acme.order.created"`) {
		t.Fatalf("Send = %v %q (%s)", res.Class, res.Response, res.Reason)
	}
	m := get(t, ch, "orders")
	h := verify(t, m)
	for name, want := range map[string]string{"webhook-id": "evt_1", "Hookjet-Event-Type": "order.created", "Hookjet-Tenant": "acme", "Hookjet-Ordering-Key": "o-7"} {
		if got := h[name]; len(got) != 1 || got[0] != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	if m.RoutingKey != "orders.acme.order.created" || m.MessageId != "evt_1" || m.DeliveryMode != amqp.Persistent {
		t.Errorf("message: key %q id %q mode %d", m.RoutingKey, m.MessageId, m.DeliveryMode)
	}

	t.Run("an exchange that does not exist is permanent and closes only its endpoint's channel", func(t *testing.T) {
		bad, _ := o.Open(endpoint(t, "ep2", map[string]any{"type": "rabbitmq", "url": node.URL(), "exchange": "nope", "routing_key": "orders.x"}))
		res := bad.Send(ctx, req)
		if res.Class != destination.Permanent || !strings.Contains(res.Reason, "NOT_FOUND - no exchange 'nope'") {
			t.Fatalf("Send = %v %q", res.Class, res.Reason)
		}
		req2 := req
		req2.EventID = "evt_2"
		if res := d.Send(ctx, req2); res.Class != destination.Success {
			t.Fatalf("the other endpoint: %v %s", res.Class, res.Reason)
		}
		get(t, ch, "orders")
		if n := o.Conns(); n != 1 {
			t.Errorf("connections: %d, want 1", n)
		}
	})

	t.Run("an unroutable message is returned: permanent", func(t *testing.T) {
		lost, _ := o.Open(endpoint(t, "ep3", map[string]any{"type": "rabbitmq", "url": node.URL(), "exchange": "hooks", "routing_key": "nobody.listens"}))
		res := lost.Send(ctx, req)
		if res.Class != destination.Permanent || !strings.Contains(res.Reason, "NO_ROUTE") {
			t.Fatalf("Send = %v %q", res.Class, res.Reason)
		}
	})

	t.Run("a wrong password is permanent and not shown", func(t *testing.T) {
		wrong := strings.Replace(node.URL(), "guest:guest", "guest:s3cret", 1)
		d, _ := o.Open(endpoint(t, "ep4", map[string]any{"type": "rabbitmq", "url": wrong, "exchange": "hooks"}))
		res := d.Send(ctx, req)
		if res.Class != destination.Permanent || strings.Contains(res.Reason, "s3cret") {
			t.Fatalf("Send = %v %q", res.Class, res.Reason)
		}
		t.Log(res.Reason)
	})

	t.Run("the broker down and back: transient, then delivered", func(t *testing.T) {
		if err := node.Kill(); err != nil {
			t.Fatal(err)
		}
		req3 := req
		req3.EventID = "evt_3"
		if res := d.Send(ctx, req3); res.Class != destination.Transient {
			t.Fatalf("broker down: %v %q", res.Class, res.Reason)
		}
		if err := node.Restart(); err != nil {
			t.Fatal(err)
		}
		// The engine's retries, for as long as a node may need to recover
		// its queues after a kill on a loaded machine.
		var res destination.Result
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			if res = d.Send(ctx, req3); res.Class == destination.Success {
				break
			}
		}
		if res.Class != destination.Success {
			t.Fatalf("after restart: %v %q; the node's output ends:\n%s", res.Class, res.Reason, node.Log())
		}
		ch := setup(t, node.URL())
		if m := get(t, ch, "orders"); m.MessageId != "evt_3" {
			t.Errorf("got %q", m.MessageId)
		}
	})
}

func TestMaskedAndValidate(t *testing.T) {
	if got := rabbitmqdest.Masked("amqp://user:pw@rabbit.example:5672/vh"); got != "amqp://***@rabbit.example:5672/vh" {
		t.Error(got)
	}
	for _, tt := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"url": "amqp://u:p@h/", "exchange": "x", "routing_key": "{type}"}, ""},
		{map[string]any{"exchange": "x"}, "destination.url: required"},
		{map[string]any{"url": "http://u:secret@h/"}, "destination.url: http://***@h/"},
	} {
		raw, _ := json.Marshal(tt.opts)
		_, err := rabbitmqdest.Parse(raw)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%v: %v, want %q", tt.opts, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}
