package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/inbound"
	"github.com/hookjet/hookjet/internal/testkit"
	"github.com/hookjet/hookjet/jetstream"
)

// inboundSources configures one source of each scheme, each with two
// secrets (rotation).
const inboundSources = `inbound:
  listen: 127.0.0.1:0
  max_body_bytes: 4096
  sources:
    - id: std
      scheme: standard
      secrets: [` + secretA + `, ` + secretB + `]
      tolerance: 1m
    - id: stripe
      scheme: stripe
      secrets: [whsec_stripe_one, whsec_stripe_two]
    - id: gh
      scheme: github
      secrets: [gh-secret-one, gh-secret-two]
    - id: shop
      scheme: shopify
      secrets: [shpss_one, shpss_two]
    - id: custom
      scheme: hmac
      secrets: [custom-one, custom-two]
      header: X-Signature
      algorithm: sha512
      encoding: base64
      prefix: "sha512="
      id_header: X-Event-Id
      type_header: X-Event-Type
`

// gateway is an in-process hookjet with its inbound gateway.
type gateway struct {
	*hookjet
	url string // http://<inbound addr>
}

func startGateway(t *testing.T, dir, extra string) *gateway {
	t.Helper()
	cfg := testConfig(t, dir, inboundSources+extra)
	h := startHookjet(t, cfg, cli.Options{})
	addr := h.srv.InboundAddr()
	if addr == "" {
		t.Fatal("the inbound gateway does not run")
	}
	return &gateway{hookjet: h, url: "http://" + addr}
}

func (g *gateway) source(id string) config.InboundSource {
	g.t.Helper()
	for _, s := range g.cfg.Inbound.Sources {
		if s.ID == id {
			return s
		}
	}
	g.t.Fatalf("no source %s", id)
	return config.InboundSource{}
}

// withSecret is src signing with its i-th secret.
func withSecret(src config.InboundSource, i int) config.InboundSource {
	src.Secrets = []config.Secret{src.Secrets[i]}
	return src
}

// body is an event body with the id and type where Stripe and Standard
// Webhooks put them.
func body(id, typ string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"type":%q,"data":{"amount":4200}}`, id, typ))
}

// post sends body with h to /in/<source> and returns the status and the
// decoded answer.
func (g *gateway) post(source string, h http.Header, b []byte) (int, map[string]string) {
	g.t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.url+inbound.Prefix+source, bytes.NewReader(b))
	if err != nil {
		g.t.Fatal(err)
	}
	if h != nil {
		req.Header = h.Clone()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("POST %s: %v", source, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	var out map[string]string
	if err := json.Unmarshal(raw, &out); err != nil {
		g.t.Fatalf("answer %q is not a JSON object: %v", raw, err)
	}
	return resp.StatusCode, out
}

// signed posts an event signed with src (its first secret) at now.
func (g *gateway) signed(src config.InboundSource, id, typ string, b []byte, now time.Time) (int, map[string]string) {
	g.t.Helper()
	h, err := inbound.Sign(src, id, typ, b, now)
	if err != nil {
		g.t.Fatal(err)
	}
	return g.post(src.ID, h, b)
}

// stored returns every message of HOOKJET_INBOUND on subjects of source.
func (g *gateway) stored(source string) []*natsjs.RawStreamMsg {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := g.js.Stream(ctx, jetstream.InboundStream)
	if err != nil {
		g.t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		g.t.Fatal(err)
	}
	var out []*natsjs.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		if strings.HasPrefix(m.Subject, jetstream.InboundPrefix+source+".") {
			out = append(out, m)
		}
	}
	return out
}

// counter returns hookjet_inbound_requests_total for source and outcome.
func (g *gateway) counter(source, outcome string) float64 {
	return g.metric(fmt.Sprintf(`hookjet_inbound_requests_total{outcome=%q,source=%q}`, outcome, source))
}

func wantAnswer(t *testing.T, what string, code int, out map[string]string, wantCode int, key, want string) {
	t.Helper()
	if code != wantCode || out[key] != want || len(out) != 1 {
		t.Errorf("%s: %d %v, want %d {%q: %q} and nothing else", what, code, out, wantCode, key, want)
	}
}

// Every scheme: a valid request is stored once with its headers and body
// unchanged, a copy is a duplicate, forged, unsigned and stale requests are
// refused with their reason, and the second secret is accepted too.
func TestInboundSchemes(t *testing.T) {
	g := startGateway(t, t.TempDir(), "")
	now := time.Now()
	types := map[string]string{"std": "invoice.paid", "stripe": "payment_intent.succeeded", "gh": "pull_request", "shop": "orders/create", "custom": "thing happened"}
	subjects := map[string]string{"std": "invoice.paid", "stripe": "payment_intent.succeeded", "gh": "pull_request", "shop": "orders.create", "custom": "thing_happened"}
	for _, id := range []string{"std", "stripe", "gh", "shop", "custom"} {
		t.Run(id, func(t *testing.T) {
			src := g.source(id)
			evID := "evt_" + id + "_1"
			b := body(evID, types[id])
			code, out := g.signed(src, evID, types[id], b, now)
			wantAnswer(t, "valid", code, out, 200, "status", "accepted")
			code, out = g.signed(src, evID, types[id], b, now)
			wantAnswer(t, "copy", code, out, 200, "status", "duplicate")

			h, _ := inbound.Sign(src, evID, types[id], b, now)
			code, out = g.post(id, h, append(bytes.Clone(b), ' '))
			wantAnswer(t, "body changed", code, out, 401, "error", "invalid signature")
			code, out = g.post(id, http.Header{"Content-Type": {"application/json"}}, b)
			wantAnswer(t, "unsigned", code, out, 401, "error", "missing signature")
			forged := src
			forged.Secrets = []config.Secret{config.NewSecret(strings.Replace(src.Secrets[0].Reveal(), "one", "six", 1))}
			if id == "std" {
				forged.Secrets = []config.Secret{config.NewSecret(secretA[:len(secretA)-4] + "AAAA")}
			}
			code, out = g.signed(forged, "evt_"+id+"_forged", types[id], body("evt_"+id+"_forged", types[id]), now)
			wantAnswer(t, "forged", code, out, 401, "error", "invalid signature")

			rotID := "evt_" + id + "_rotated"
			code, out = g.signed(withSecret(src, 1), rotID, types[id], body(rotID, types[id]), now)
			wantAnswer(t, "second secret", code, out, 200, "status", "accepted")

			msgs := g.stored(id)
			if len(msgs) != 2 {
				t.Fatalf("%d messages stored, want 2 (the valid one once, the rotated one)", len(msgs))
			}
			m := msgs[0]
			if want := jetstream.InboundPrefix + id + "." + subjects[id]; m.Subject != want {
				t.Errorf("subject %s, want %s", m.Subject, want)
			}
			if !bytes.Equal(m.Data, b) {
				t.Errorf("body changed: %q", m.Data)
			}
			hdr := m.Header
			if hdr.Get(jetstream.HdrMsgID) != id+":"+evID || hdr.Get(jetstream.HdrInboundSource) != id || hdr.Get(jetstream.HdrInboundID) != evID || hdr.Get("Content-Type") != "application/json" {
				t.Errorf("headers %v", hdr)
			}
			if at, err := time.Parse(time.RFC3339Nano, hdr.Get(jetstream.HdrReceivedAt)); err != nil || time.Since(at) > time.Minute {
				t.Errorf("Hookjet-Received-At %q: %v", hdr.Get(jetstream.HdrReceivedAt), err)
			}
			for outcome, want := range map[string]float64{"accepted": 2, "duplicate": 1, "invalid_signature": 2, "missing_signature": 1} {
				if got := g.counter(id, outcome); got != want {
					t.Errorf("%s = %v, want %v", outcome, got, want)
				}
			}
		})
	}
	for _, id := range []string{"std", "stripe"} { // the schemes that sign a timestamp
		src := g.source(id)
		for _, at := range []time.Time{now.Add(-src.Window() - 2*time.Second), now.Add(src.Window() + 2*time.Second)} {
			code, out := g.signed(src, "evt_stale", "x", body("evt_stale", "x"), at)
			wantAnswer(t, id+" outside the window", code, out, 400, "error", "timestamp outside the tolerance")
		}
		if got := g.counter(id, "outside_window"); got != 2 {
			t.Errorf("%s outside_window = %v, want 2", id, got)
		}
	}
	var sum struct {
		Inbound map[string]map[string]int64 `json:"inbound"`
	}
	if code := g.api("GET", "/api/v1/summary", "", nil, &sum); code != 200 {
		t.Fatalf("summary: HTTP %d", code)
	}
	want := map[string]int64{"accepted": 2, "duplicates": 1, "signature_failures": 3, "window_rejections": 2, "too_large": 0, "unavailable": 0}
	if got := sum.Inbound["stripe"]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("summary inbound.stripe = %v, want %v", got, want)
	}
	var out bytes.Buffer
	if err := cli.Run(context.Background(), []string{"status", "--admin", g.srv.AdminAddr()}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2 accepted, 1 duplicates, 3 signature failures, 2 outside the window, 0 too large, 0 unavailable") {
		t.Errorf("hookjet status:\n%s", out.String())
	}
}

// Refusals that name their reason: unknown source, wrong method, body too
// large (announced or streamed).
func TestInboundLimits(t *testing.T) {
	g := startGateway(t, t.TempDir(), "")
	src := g.source("gh")
	code, out := g.signed(config.InboundSource{ID: "nope", Scheme: "github", Secrets: src.Secrets}, "d1", "push", []byte("{}"), time.Now())
	wantAnswer(t, "unknown source", code, out, 404, "error", "unknown source")

	resp, err := http.Get(g.url + "/in/gh")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET: %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}

	big := bytes.Repeat([]byte("x"), 4097)
	code, out = g.signed(src, "d2", "push", big, time.Now())
	wantAnswer(t, "too large", code, out, 413, "error", "body larger than 4096 bytes")
	h, _ := inbound.Sign(src, "d3", "push", big, time.Now())
	req, _ := http.NewRequest(http.MethodPost, g.url+"/in/gh", io.MultiReader(bytes.NewReader(big))) // no Content-Length: chunked
	req.Header = h
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 || req.ContentLength != 0 {
		t.Errorf("streamed body: %d (content length %d)", resp.StatusCode, req.ContentLength)
	}
	exact := bytes.Repeat([]byte("y"), 4096)
	code, out = g.signed(src, "d4", "push", exact, time.Now())
	wantAnswer(t, "at the limit", code, out, 200, "status", "accepted")
	if got := g.counter("gh", "too_large"); got != 2 {
		t.Errorf("too_large = %v, want 2", got)
	}
}

// A duplicate is recognised after a restart and past the stream's
// duplicate window: the dedupe ledger remembers it for dedupe.ttl.
func TestInboundDuplicatePastWindowAndRestart(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, dir, "streams:\n  duplicate_window: 1s\n")
	src := g.source("stripe")
	b := body("evt_once", "charge.succeeded")
	code, out := g.signed(src, "", "", b, time.Now())
	wantAnswer(t, "first", code, out, 200, "status", "accepted")
	g.stop()
	time.Sleep(1500 * time.Millisecond) // past the duplicate window
	g = startGateway(t, dir, "streams:\n  duplicate_window: 1s\n")
	code, out = g.signed(src, "", "", b, time.Now())
	wantAnswer(t, "after restart and window", code, out, 200, "status", "duplicate")
	if n := len(g.stored("stripe")); n != 1 {
		t.Errorf("%d copies stored, want 1", n)
	}
	if got := g.counter("stripe", "duplicate"); got != 1 {
		t.Errorf("duplicate = %v, want 1", got)
	}
}

// When JetStream cannot store the event the answer is 503, nothing is
// marked, and the provider's retry is stored (once).
func TestInboundUnavailable(t *testing.T) {
	g := startGateway(t, t.TempDir(), "")
	src := g.source("shop")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.js.DeleteStream(ctx, jetstream.InboundStream); err != nil {
		t.Fatal(err)
	}
	b := body("", "")
	code, out := g.signed(src, "w-1", "orders/paid", b, time.Now())
	wantAnswer(t, "stream gone", code, out, 503, "error", "cannot store the event now; retry later")
	if got := g.counter("shop", "unavailable"); got != 1 {
		t.Errorf("unavailable = %v, want 1", got)
	}
	if err := jetstream.EnsureInbound(ctx, g.js, g.cfg, nil); err != nil {
		t.Fatal(err)
	}
	code, out = g.signed(src, "w-1", "orders/paid", b, time.Now())
	wantAnswer(t, "retry", code, out, 200, "status", "accepted")
	code, out = g.signed(src, "w-1", "orders/paid", b, time.Now())
	wantAnswer(t, "again", code, out, 200, "status", "duplicate")
	if n := len(g.stored("shop")); n != 1 {
		t.Errorf("%d copies stored, want 1", n)
	}
}

// `hookjet inbound test` signs an event, sends it through the gateway,
// reports where it was stored and waits for a durable consumer's ack.
func TestInboundTestCommand(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, dir, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := g.js.CreateOrUpdateConsumer(ctx, jetstream.InboundStream, natsjs.ConsumerConfig{
		Durable: "billing-worker", AckPolicy: natsjs.AckExplicitPolicy, FilterSubject: jetstream.InboundPrefix + "custom.>",
	})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := c.Consume(func(m natsjs.Msg) { _ = m.Ack() })
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	file := filepath.Join(dir, "hookjet.yaml")
	yaml := fmt.Sprintf("nats:\n  listen: %s\n%s", g.cfg.NATS.Listen, inboundSources)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr testkit.LockedBuffer
	err = cli.Run(ctx, []string{"inbound", "test", "custom", "--config", file, "--url", g.url, "--wait-consumer", "billing-worker", "--timeout", "20s"},
		func(string) string { return "" }, &stdout, &stderr)
	if err != nil {
		t.Fatalf("inbound test: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	got := stdout.String()
	for _, want := range []string{"200 accepted", "stored: HOOKJET_INBOUND seq=1 subject=hookjet.inbound.custom.hookjet.test received_at=", "acked by consumer billing-worker"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	msgs := g.stored("custom")
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Data), `"hookjet_test":true`) {
		t.Fatalf("stored %d messages", len(msgs))
	}
	err = cli.Run(ctx, []string{"inbound", "test", "nope", "--config", file}, func(string) string { return "" }, &stdout, &stderr)
	if code := cli.ExitCode(err, io.Discard); code != 2 {
		t.Errorf("unknown source: exit %d (%v)", code, err)
	}
	err = cli.Run(ctx, []string{"inbound", "test", "gh", "--config", file, "--url", g.url, "--wait-consumer", "missing", "--timeout", "5s"}, func(string) string { return "" }, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--wait-consumer missing") {
		t.Errorf("missing consumer: %v", err)
	}
	var help bytes.Buffer
	if err := cli.Run(ctx, []string{"inbound", "test", "--help"}, func(string) string { return "" }, &help, io.Discard); cli.ExitCode(err, io.Discard) != 0 || !strings.Contains(help.String(), "--wait-consumer NAME") {
		t.Errorf("--help: %v\n%s", err, help.String())
	}
}

// With the NATS server down the gateway answers 503 and marks nothing; once
// it is back, the provider's retry is stored, once.
func TestInboundNATSDown(t *testing.T) {
	ns := startNATSNode(t, "ext", standaloneNATS(t))
	cfg := testConfig(t, t.TempDir(), inboundSources)
	cfg.NATS.URL = ns.url()
	h := startHookjet(t, cfg, cli.Options{})
	g := &gateway{hookjet: h, url: "http://" + h.srv.InboundAddr()}
	src := g.source("gh")
	b := []byte(`{"action":"opened"}`)
	code, out := g.signed(src, "delivery-1", "issues", b, time.Now())
	wantAnswer(t, "up", code, out, 200, "status", "accepted")
	ns.shutdown()
	b = []byte(`{"action":"closed"}`) // another event: github dedupes on the body too
	code, out = g.signed(src, "delivery-2", "issues", b, time.Now())
	wantAnswer(t, "NATS down", code, out, 503, "error", "cannot store the event now; retry later")
	ns.start()
	checkFor(t, 20*time.Second, 100*time.Millisecond, func() error { // the provider retries
		if code, out := g.signed(src, "delivery-2", "issues", b, time.Now()); code != 200 || out["status"] != "accepted" {
			return fmt.Errorf("retry: %d %v", code, out)
		}
		return nil
	})
	code, out = g.signed(src, "delivery-2", "issues", b, time.Now())
	wantAnswer(t, "copy", code, out, 200, "status", "duplicate")
	if n := len(g.stored("gh")); n != 2 {
		t.Errorf("%d messages stored, want 2 (delivery-1, delivery-2 once)", n)
	}
	if got := g.counter("gh", "unavailable"); got < 1 {
		t.Errorf("unavailable = %v", got)
	}
}

// GitHub (and Shopify, and hmac) sign the body only: the delivery id
// header is not covered, so a captured request resent with a new
// X-GitHub-Delivery must still be a duplicate. A new event (another body)
// is accepted.
func TestInboundGitHubReplayUnderNewDeliveryIDIsDuplicate(t *testing.T) {
	g := startGateway(t, t.TempDir(), "")
	now := time.Now()
	seen := uint64(0)
	for _, id := range []string{"gh", "shop", "custom"} {
		src := g.source(id)
		b := []byte(`{"action":"opened","number":42,"source":"` + id + `"}`)
		h, err := inbound.Sign(src, "delivery-1", "pull_request", b, now)
		if err != nil {
			t.Fatal(err)
		}
		code, out := g.post(id, h, b)
		wantAnswer(t, id+" original", code, out, 200, "status", "accepted")
		g.waitSeenMarks(seen + 1) // the mark is stored after the answer
		seen++
		replay := h.Clone()
		for _, k := range []string{"X-Github-Delivery", "X-Shopify-Webhook-Id", "X-Event-Id"} {
			if replay.Get(k) != "" {
				replay.Set(k, "delivery-forged-2")
			}
		}
		code, out = g.post(id, replay, b)
		wantAnswer(t, id+" replayed under a new delivery id", code, out, 200, "status", "duplicate")
		other := []byte(`{"action":"closed","number":42,"source":"` + id + `"}`)
		code, out = g.signed(src, "delivery-3", "pull_request", other, now)
		wantAnswer(t, id+" another event", code, out, 200, "status", "accepted")
		g.waitSeenMarks(seen + 1)
		seen++
	}
}

// waitSeenMarks waits until HOOKJET_SEEN holds n inbound ids
// (hookjet.seen.inbound).
func (g *gateway) waitSeenMarks(n uint64) {
	g.t.Helper()
	checkFor(g.t, 5*time.Second, 10*time.Millisecond, func() error {
		st, err := g.js.Stream(context.Background(), jetstream.SeenStream)
		if err != nil {
			return err
		}
		info, err := st.Info(context.Background(), natsjs.WithSubjectFilter(jetstream.SeenInbound))
		if err != nil {
			return err
		}
		if got := info.State.Subjects[jetstream.SeenInbound]; got < n {
			return fmt.Errorf("%d marks, want %d", got, n)
		}
		return nil
	})
}
