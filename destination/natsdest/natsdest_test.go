package natsdest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/destination/natsdest"
	"github.com/hookjet/hookjet/signature"
	"github.com/hookjet/hookjet/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// runServer starts a second nats-server with JetStream, the one hookjet
// delivers to.
func runServer(t *testing.T, port int) *natsserver.Server {
	t.Helper()
	s, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(s.Shutdown)
	return s
}

func signer(t *testing.T) *signature.Signer {
	k, err := signature.DecodeSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	return signature.NewSigner(k)
}

func endpoint(t *testing.T, id string, opts map[string]any) destination.Endpoint {
	raw, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	return destination.Endpoint{ID: id, Type: natsdest.Type, Signer: signer(t), Timeout: 3 * time.Second, Options: raw}
}

func TestSendJetStream(t *testing.T) {
	s := runServer(t, -1)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	ctx := context.Background()
	stream, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	o := natsdest.New(natsdest.Config{})
	defer o.Close()
	d, err := o.Open(endpoint(t, "ep1", map[string]any{"type": "nats", "url": s.ClientURL(), "subject": "orders.{tenant}.{type}"}))
	if err != nil {
		t.Fatal(err)
	}
	req := destination.Request{EventID: "evt_1", EventType: "order.created", Tenant: "acme", OrderingKey: "k1", Payload: []byte(`{"order":42}`)}
	res := d.Send(ctx, req)
	if res.Class != destination.Success || string(res.Response) != "stream ORDERS seq 1" {
		t.Fatalf("Send = %v %q (%s)", res.Class, res.Response, res.Reason)
	}
	// a retry is dropped by the stream's duplicate window; a replay is not
	if res := d.Send(ctx, req); res.Class != destination.Success || !strings.Contains(string(res.Response), "duplicate") {
		t.Fatalf("retry: %v %q", res.Class, res.Response)
	}
	req.Replay = 1
	if res := d.Send(ctx, req); res.Class != destination.Success || string(res.Response) != "stream ORDERS seq 2" {
		t.Fatalf("replay: %v %q", res.Class, res.Response)
	}
	m, err := stream.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "orders.acme.order.created" {
		t.Errorf("subject %q", m.Subject)
	}
	for name, want := range map[string]string{"webhook-id": "evt_1", "Hookjet-Event-Type": "order.created", "Hookjet-Tenant": "acme", "Hookjet-Ordering-Key": "k1", "Nats-Msg-Id": "ep1:evt_1"} {
		if got := m.Header.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	v, err := webhook.NewVerifier([]string{secret})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifyMessage(m.Header, m.Data); err != nil {
		t.Errorf("signature: %v", err)
	}
	m2, err := stream.GetMsg(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := m2.Header.Get("Nats-Msg-Id"); got != "ep1:evt_1:replay-1" {
		t.Errorf("replay's Nats-Msg-Id %q", got)
	}

	// no stream takes the subject: permanent, in the broker's words
	d2, _ := o.Open(endpoint(t, "ep2", map[string]any{"type": "nats", "url": s.ClientURL(), "subject": "nowhere.{type}"}))
	if res := d2.Send(ctx, req); res.Class != destination.Permanent || !strings.Contains(res.Reason, "no response from stream") {
		t.Errorf("no stream: %v %q", res.Class, res.Reason)
	}
	if n := o.Conns(); n != 1 {
		t.Errorf("connections: %d, want 1 shared", n)
	}
}

func TestSendCore(t *testing.T) {
	s := runServer(t, -1)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("plain.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	o := natsdest.New(natsdest.Config{})
	defer o.Close()
	d, err := o.Open(endpoint(t, "ep1", map[string]any{"type": "nats", "url": s.ClientURL(), "subject": "plain.{type}", "jetstream": false}))
	if err != nil {
		t.Fatal(err)
	}
	res := d.Send(context.Background(), destination.Request{EventID: "evt_1", EventType: "a.b", Payload: []byte("{}")})
	if res.Class != destination.Success {
		t.Fatalf("Send: %v %s", res.Class, res.Reason)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := webhook.NewVerifier([]string{secret})
	if err := v.VerifyMessage(m.Header, m.Data); err != nil || m.Subject != "plain.a.b" {
		t.Errorf("%s: %v", m.Subject, err)
	}
}

// refusing is a guard that refuses every address, as the SSRF guard refuses
// a private one.
type refusing struct{}

func (refusing) DialContext(_ context.Context, _, address string) (net.Conn, error) {
	return nil, fmt.Errorf("%w: refused: %s is a loopback address", destination.ErrRefused, address)
}

func TestSendFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	ctx := context.Background()
	req := destination.Request{EventID: "evt_1", EventType: "a", Payload: []byte("{}")}

	o := natsdest.New(natsdest.Config{Dialer: refusing{}})
	d, _ := o.Open(endpoint(t, "ep1", map[string]any{"type": "nats", "url": "nats://" + addr, "subject": "x"}))
	if res := d.Send(ctx, req); res.Class != destination.Rejected || !errors.Is(res.Err, destination.ErrRefused) {
		t.Errorf("guard: %v %q", res.Class, res.Reason)
	}
	o.Close()

	o = natsdest.New(natsdest.Config{})
	defer o.Close()
	d, _ = o.Open(endpoint(t, "ep1", map[string]any{"type": "nats", "url": "nats://" + addr, "subject": "x"}))
	if res := d.Send(ctx, req); res.Class != destination.Transient {
		t.Errorf("server down: %v %q", res.Class, res.Reason)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		opts map[string]any
		want string // "" means valid
	}{
		{map[string]any{"url": "nats://h:4222", "subject": "orders.{type}"}, ""},
		{map[string]any{"url": "tls://a:4222,tls://b:4222", "subject": "x"}, ""},
		{map[string]any{"subject": "x"}, "destination.url: required"},
		{map[string]any{"url": "http://h", "subject": "x"}, "destination.url: scheme"},
		{map[string]any{"url": "nats://h:4222", "subject": "$JS.API.x"}, "destination.subject: \"$JS.API.x\" is reserved"},
		{map[string]any{"url": "nats://h:4222", "subject": "_INBOX.x"}, "reserved"},
		{map[string]any{"url": "nats://h:4222", "subject": "hookjet.events.x"}, "reserved"},
		{map[string]any{"url": "nats://h:4222", "subject": "a.*"}, "wildcard"},
		{map[string]any{"url": "nats://h:4222", "subject": "a..b"}, "empty token"},
		{map[string]any{"url": "nats://h:4222"}, "destination.subject: required"},
	} {
		raw, _ := json.Marshal(tt.opts)
		_, err := natsdest.Parse(raw)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%v: %v, want %q", tt.opts, err, tt.want)
		}
	}
}

func TestMsgID(t *testing.T) {
	if got := natsdest.MsgID("ep", "evt", 0); got != "ep:evt" {
		t.Error(got)
	}
	if got := natsdest.MsgID("ep", "evt", 3); got != "ep:evt:replay-3" {
		t.Error(got)
	}
}

// The server down: transient; back (same port, same store): delivered on
// the connection nats.go restored, and stored once.
func TestServerDownAndBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	store := t.TempDir()
	start := func() *natsserver.Server {
		s, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: store, NoLog: true, NoSigs: true})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatal("not ready")
		}
		return s
	}
	s := start()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := natsjs.New(nc)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	o := natsdest.New(natsdest.Config{})
	defer o.Close()
	ep := endpoint(t, "ep1", map[string]any{"type": "nats", "url": s.ClientURL(), "subject": "orders.x"})
	ep.Timeout = time.Second
	d, _ := o.Open(ep)
	req := destination.Request{EventID: "evt_1", EventType: "a", Payload: []byte("{}")}
	if res := d.Send(ctx, req); res.Class != destination.Success {
		t.Fatalf("first: %v %s", res.Class, res.Reason)
	}
	s.Shutdown()
	s.WaitForShutdown()
	req.EventID = "evt_2"
	if res := d.Send(ctx, req); res.Class != destination.Transient {
		t.Fatalf("server down: %v %s", res.Class, res.Reason)
	}
	s = start()
	defer s.Shutdown()
	var res destination.Result
	for range 30 { // the engine's retries
		if res = d.Send(ctx, req); res.Class == destination.Success {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if res.Class != destination.Success || string(res.Response) != "stream ORDERS seq 2" {
		t.Fatalf("after restart: %v %q %s", res.Class, res.Response, res.Reason)
	}
}
