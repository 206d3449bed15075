package kafkadest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/destination/kafkadest"
	"github.com/hookjet/hookjet/signature"
	"github.com/hookjet/hookjet/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func cluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, "orders.acme", "orders._")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

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
	return destination.Endpoint{ID: id, Type: kafkadest.Type, Signer: signature.NewSigner(k), Timeout: 3 * time.Second, Options: raw}
}

func opener() *kafkadest.Opener {
	return kafkadest.New(kafkadest.Config{Client: []kgo.Opt{kgo.MetadataMinAge(50 * time.Millisecond)}})
}

// consume reads n records of topic from the start.
func consume(t *testing.T, c *kfake.Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		f := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(recs), n, err)
		}
		recs = append(recs, f.Records()...)
	}
	return recs
}

func TestSend(t *testing.T) {
	c := cluster(t)
	o := opener()
	defer o.Close()
	d, err := o.Open(endpoint(t, "ep1", map[string]any{"type": "kafka", "brokers": c.ListenAddrs(), "topic": "orders.{tenant}"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res := d.Send(ctx, destination.Request{EventID: "evt_1", EventType: "order.created", Tenant: "acme", Payload: []byte(`{"order":42}`)})
	if res.Class != destination.Success || !strings.HasPrefix(string(res.Response), "topic orders.acme partition ") || !strings.HasSuffix(string(res.Response), " offset 0") {
		t.Fatalf("Send = %v %q (%s)", res.Class, res.Response, res.Reason)
	}
	// a key's order holds: the ordering key is the record key
	for i := range 20 {
		res := d.Send(ctx, destination.Request{EventID: fmt.Sprintf("evt_k%d", i), EventType: "order.updated", OrderingKey: "order-7", Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))})
		if res.Class != destination.Success {
			t.Fatalf("Send %d: %v %s", i, res.Class, res.Reason)
		}
	}
	recs := consume(t, c, "orders._", 20)
	v, err := webhook.NewVerifier([]string{secret})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if string(r.Key) != "order-7" || r.Partition != recs[0].Partition || string(r.Value) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Errorf("record %d: key %q partition %d value %s", i, r.Key, r.Partition, r.Value)
		}
		h := map[string][]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = append(h[kv.Key], string(kv.Value))
		}
		if err := v.VerifyMessage(h, r.Value); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
		if h["Hookjet-Ordering-Key"][0] != "order-7" || h["Hookjet-Event-Type"][0] != "order.updated" || h["webhook-id"][0] != fmt.Sprintf("evt_k%d", i) {
			t.Errorf("record %d headers %v", i, h)
		}
	}
	first := consume(t, c, "orders.acme", 1)[0]
	if string(first.Key) != "evt_1" {
		t.Errorf("key without an ordering key: %q, want the event id", first.Key)
	}

	// a topic the cluster does not have: permanent, once the client's
	// retries found it nowhere
	d2, _ := o.Open(endpoint(t, "ep2", map[string]any{"type": "kafka", "brokers": c.ListenAddrs(), "topic": "missing"}))
	if res := d2.Send(ctx, destination.Request{EventID: "evt_2", EventType: "a", Payload: []byte("{}")}); res.Class != destination.Permanent || !strings.Contains(res.Reason, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("unknown topic: %v %q", res.Class, res.Reason)
	}
	if n := o.Clients(); n != 1 {
		t.Errorf("clients: %d, want 1", n)
	}
}

func TestSASL(t *testing.T) {
	c := cluster(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "hook", "right"))
	o := opener()
	defer o.Close()
	ctx := context.Background()
	req := destination.Request{EventID: "evt_1", EventType: "a", Tenant: "acme", Payload: []byte("{}")}
	d, _ := o.Open(endpoint(t, "ep1", map[string]any{"type": "kafka", "brokers": c.ListenAddrs(), "topic": "orders.acme", "sasl": map[string]any{"mechanism": "SCRAM-SHA-256", "user": "hook", "password": "right"}}))
	if res := d.Send(ctx, req); res.Class != destination.Success {
		t.Fatalf("SCRAM: %v %s", res.Class, res.Reason)
	}
	// kfake closes the connection on wrong credentials: an EOF, which a
	// broker going away gives too, so transient
	d, _ = o.Open(endpoint(t, "ep2", map[string]any{"type": "kafka", "brokers": c.ListenAddrs(), "topic": "orders.acme", "sasl": map[string]any{"mechanism": "SCRAM-SHA-256", "user": "hook", "password": "wrong"}}))
	res := d.Send(ctx, req)
	if res.Class != destination.Transient || strings.Contains(res.Reason, "wrong") {
		t.Fatalf("wrong password, connection closed: %v %s", res.Class, res.Reason)
	}
	// Kafka answers SASL_AUTHENTICATION_FAILED: permanent, in its words
	c.ControlKey(36, func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
	d, _ = o.Open(endpoint(t, "ep3", map[string]any{"type": "kafka", "brokers": c.ListenAddrs(), "topic": "orders.acme", "sasl": map[string]any{"mechanism": "SCRAM-SHA-256", "user": "hook", "password": "wrong2"}}))
	res = d.Send(ctx, req)
	if res.Class != destination.Permanent || !strings.Contains(res.Reason, "SASL_AUTHENTICATION_FAILED") || strings.Contains(res.Reason, "wrong2") {
		t.Fatalf("wrong password, refused: %v %s", res.Class, res.Reason)
	}
	t.Log(res.Reason)
	if n := o.Clients(); n != 3 {
		t.Errorf("clients: %d, want 3 (one per credentials)", n)
	}
}

// recording is a guard that refuses every address, recording them.
type refusing struct{}

func (refusing) DialContext(_ context.Context, _, address string) (net.Conn, error) {
	return nil, fmt.Errorf("%w: refused: %s is a loopback address", destination.ErrRefused, address)
}

func TestGuard(t *testing.T) {
	c := cluster(t)
	o := kafkadest.New(kafkadest.Config{Dialer: refusing{}})
	defer o.Close()
	d, _ := o.Open(endpoint(t, "ep1", map[string]any{"type": "kafka", "brokers": c.ListenAddrs(), "topic": "orders.acme"}))
	res := d.Send(context.Background(), destination.Request{EventID: "evt_1", EventType: "a", Payload: []byte("{}")})
	if res.Class != destination.Rejected || !errors.Is(res.Err, destination.ErrRefused) {
		t.Fatalf("guard: %v %s", res.Class, res.Reason)
	}
}

// 10,000 endpoints on one cluster hold one client.
func TestSharedClient(t *testing.T) {
	c := cluster(t)
	o := opener()
	defer o.Close()
	const n = 10000
	ds := make([]destination.Destination, n)
	for i := range ds {
		d, err := o.Open(endpoint(t, fmt.Sprintf("ep%d", i), map[string]any{"type": "kafka", "brokers": c.ListenAddrs(), "topic": "orders.{tenant}"}))
		if err != nil {
			t.Fatal(err)
		}
		ds[i] = d
	}
	if got := o.Clients(); got != 0 {
		t.Fatalf("clients of idle endpoints: %d, want 0", got)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	errs := make(chan string, n)
	for i, d := range ds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res := d.Send(context.Background(), destination.Request{EventID: fmt.Sprintf("evt_%d", i), EventType: "a", Tenant: "acme", Payload: []byte("{}")})
			if res.Class != destination.Success {
				errs <- res.Reason
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if got := o.Clients(); got != 1 {
		t.Fatalf("clients of %d endpoints: %d, want 1", n, got)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"brokers": []string{"k:9092"}, "topic": "orders.{type}"}, ""},
		{map[string]any{"topic": "x"}, "destination.brokers: at least one"},
		{map[string]any{"brokers": []string{"k"}, "topic": "x"}, "destination.brokers[0]"},
		{map[string]any{"brokers": []string{"k:9092"}}, "destination.topic: required"},
		{map[string]any{"brokers": []string{"k:9092"}, "topic": "a/b"}, "destination.topic"},
		{map[string]any{"brokers": []string{"k:9092"}, "topic": "x", "sasl": map[string]any{"mechanism": "GSSAPI", "user": "u"}}, "destination.sasl.mechanism"},
	} {
		raw, _ := json.Marshal(tt.opts)
		_, err := kafkadest.Parse(raw)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%v: %v, want %q", tt.opts, err, tt.want)
		}
	}
}

// An attempt ends by its endpoint's timeout when the cluster went away
// after the client connected: transient, saying why.
func TestSendEndsAtTimeoutWhenClusterGone(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	o := opener()
	defer o.Close()
	ep := endpoint(t, "ep1", map[string]any{"type": "kafka", "brokers": c.ListenAddrs(), "topic": "orders"})
	ep.Timeout = time.Second
	d, err := o.Open(ep)
	if err != nil {
		t.Fatal(err)
	}
	if res := d.Send(context.Background(), destination.Request{EventID: "evt_1", EventType: "a", Payload: []byte("{}")}); res.Class != destination.Success {
		t.Fatalf("first Send: %+v", res)
	}
	c.Close()
	done := make(chan destination.Result, 1)
	go func() {
		done <- d.Send(context.Background(), destination.Request{EventID: "evt_2", EventType: "a", Payload: []byte("{}")})
	}()
	select {
	case res := <-done:
		if res.Class != destination.Transient {
			t.Fatalf("Send to a cluster gone: %v %q, want transient", res.Class, res.Reason)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Send to a cluster gone did not end 20 s after its 1 s timeout")
	}
}
