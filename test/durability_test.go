package test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
	hjs "github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/outbox"
)

// With a hold (a lazily syncing server), relayed rows stay in the table
// after their PubAcks, are not published again meanwhile, do not hold back
// the rows after them (more rows than one batch), and are deleted once the
// hold has passed.
func TestOutboxHoldKeepsRowsUntilTheInterval(t *testing.T) {
	pg := outboxDB(t)
	_, r, url := outboxHookjet(t, "")
	relay := startRelay(t, pg, url, "held", outbox.WithHold(time.Hour))
	ids := insertRows(t, pg, "held", 1200) // batch 500: three claims
	waitAllDelivered(t, r, ids, 30*time.Second)
	marker := insertRows(t, pg, "zz-held-marker", 1) // claimed after the others
	waitAllDelivered(t, r, marker, 30*time.Second)
	if n := pg.Count(t, "SELECT count(*) FROM hookjet_outbox"); n != 1201 {
		t.Fatalf("%d rows in the outbox after relaying 1201 with a hold of an hour, want all of them", n)
	}
	if got := relay.counter(t, "hookjet_outbox_relayed_total"); got != 1201 {
		t.Errorf("relayed %v rows, want 1201: held rows were published again", got)
	}

	pg2 := outboxDB(t)
	_, r2, url2 := outboxHookjet(t, "")
	startRelay(t, pg2, url2, "short", outbox.WithHold(300*time.Millisecond))
	ids2 := insertRows(t, pg2, "short", 700)
	waitAllDelivered(t, r2, ids2, 30*time.Second)
	tableEmpty(t, pg2, 30*time.Second)
	exactlyOnce(t, pg2, r2, ids2)
}

// With nats.url, hookjet reads what it can of the servers' durability: a
// normal account cannot read the sync policy ("unknown", treated as lazy),
// so the R1 streams are at risk; /readyz says so.
func TestExternalNATSDurabilityInReadyz(t *testing.T) {
	ns := startNATSNode(t, "ext", standaloneNATS(t))
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "sink", URL: r.URL})
	cfg.NATS.URL = ns.url()
	h := startHookjet(t, cfg, cli.Options{})
	var ready struct {
		Status     string         `json:"status"`
		Durability hjs.Durability `json:"durability"`
	}
	if code := h.api("GET", "/readyz", "", nil, &ready); code != http.StatusOK {
		t.Fatalf("readyz: HTTP %d", code)
	}
	d := ready.Durability
	if d.Sync != hjs.SyncUnknown {
		t.Errorf("sync = %q, want %q", d.Sync, hjs.SyncUnknown)
	}
	for _, name := range []string{hjs.EventsStream, hjs.TasksStream, hjs.DLQStream, "KV_" + hjs.EndpointBucket} {
		if !slices.Contains(d.AtRisk, name) {
			t.Errorf("at_risk %v lacks %s (R1 on a server of unknown sync policy)", d.AtRisk, name)
		}
	}
	if len(d.Streams) == 0 || d.Streams[0].Replicas != 1 {
		t.Errorf("streams = %+v, want hookjet's streams with 1 replica", d.Streams)
	}
	if hold := d.EventsHold(); hold != hjs.DefaultSyncInterval {
		t.Errorf("outbox hold = %v, want JetStream's default interval %v", hold, hjs.DefaultSyncInterval)
	}
}

// The system account can read the servers' sync policy; another account
// cannot.
func TestReadSyncPolicy(t *testing.T) {
	tests := []struct {
		name     string
		always   bool
		interval time.Duration
		user     string
		want     string
	}{
		{"always", true, 0, "sys", config.SyncAlways},
		{"interval", false, 45 * time.Second, "sys", "45s"},
		{"default", false, 0, "sys", "2m0s"},
		{"normal account", true, 0, "app", hjs.SyncUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys, app := server.NewAccount("SYS"), server.NewAccount("APP")
			dir := t.TempDir()
			n := startNATSNode(t, "policy", func() *server.Options {
				return &server.Options{
					Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
					SyncAlways: tt.always, SyncInterval: tt.interval,
					Accounts: []*server.Account{sys, app}, SystemAccount: "SYS",
					Users: []*server.User{{Username: "sys", Password: "pw", Account: sys}, {Username: "app", Password: "pw", Account: app}},
				}
			})
			n.mu.Lock()
			url := n.s.ClientURL()
			n.mu.Unlock()
			nc, err := nats.Connect(url, nats.UserInfo(tt.user, "pw"))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			got, err := hjs.ReadSyncPolicy(t.Context(), nc)
			if got != tt.want {
				t.Errorf("ReadSyncPolicy = %q (%v), want %q", got, err, tt.want)
			}
			if (err != nil) != (tt.want == hjs.SyncUnknown) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// hookjet serve with the embedded server records its nats.sync in
// HOOKJET_EVENTS's metadata, where outbox relays connecting over nats.url
// read it; the events stream takes atomic batches.
func TestEmbeddedRecordsSyncPolicy(t *testing.T) {
	h, _, _ := outboxHookjet(t, "")
	st, err := h.js.Stream(t.Context(), hjs.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	if got := sc.Metadata[hjs.SyncMetadata]; got != config.SyncAlways {
		t.Errorf("metadata %s = %q, want %q", hjs.SyncMetadata, got, config.SyncAlways)
	}
	if !sc.AllowAtomicPublish {
		t.Error("HOOKJET_EVENTS does not allow atomic batches")
	}
}

// The outbox publisher stores a batch of events as one atomic batch (one
// fsync on a server that syncs always), and a batch JetStream refuses
// because it already has some of its ids (a republish after a crash) one by
// one, as duplicates.
func TestOutboxPublisherAtomicBatches(t *testing.T) {
	h, _, _ := outboxHookjet(t, "")
	pub, err := hjs.NewOutboxPublisher(h.nc, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]outbox.Message, 50)
	for i := range batch {
		batch[i] = outbox.Message{ID: fmt.Sprintf("atomic-%02d", i), EventType: "order.created", Payload: []byte(`{}`)}
	}
	for i, a := range pub.Publish(t.Context(), batch) {
		if a.Err != nil || a.Duplicate {
			t.Fatalf("first publish of %s: %+v", batch[i].ID, a)
		}
	}
	st, err := h.js.Stream(t.Context(), hjs.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.GetMsg(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if first.Header.Get("Nats-Batch-Id") == "" {
		t.Errorf("event %s was not stored in an atomic batch (headers %v)", first.Header.Get(hjs.HdrMsgID), first.Header)
	}
	again := append(batch[40:50:50], outbox.Message{ID: "atomic-new", EventType: "order.created", Payload: []byte(`{}`)})
	acks := pub.Publish(t.Context(), again)
	for i, a := range acks {
		if a.Err != nil || a.Duplicate != (i < 10) {
			t.Errorf("republish of %s: %+v, want duplicate %v", again[i].ID, a, i < 10)
		}
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 51 {
		t.Errorf("%d events stored, want 51", info.State.Msgs)
	}
}

// An operator whose servers sync always records it in HOOKJET_EVENTS's
// metadata; hookjet keeps the key when it updates the stream's config and
// then counts no stream at risk.
func TestExternalNATSOperatorRecordedSync(t *testing.T) {
	ns := startNATSNode(t, "ext", standaloneNATS(t))
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "sink", URL: r.URL})
	cfg.NATS.URL = ns.url()
	h := startHookjet(t, cfg, cli.Options{})
	st, err := h.js.Stream(t.Context(), hjs.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	sc.Metadata[hjs.SyncMetadata] = config.SyncAlways
	if _, err := h.js.UpdateStream(t.Context(), sc); err != nil {
		t.Fatal(err)
	}
	h.stop()

	cfg2 := testConfig(t, t.TempDir(), "", endpointYAML{ID: "sink", URL: r.URL})
	cfg2.NATS.URL = ns.url()
	cfg2.Streams.MaxAge = cfg.Streams.MaxAge / 2 // the stream's config is updated at start
	h2 := startHookjet(t, cfg2, cli.Options{})
	var ready struct {
		Durability hjs.Durability `json:"durability"`
	}
	if code := h2.api("GET", "/readyz", "", nil, &ready); code != http.StatusOK {
		t.Fatalf("readyz: HTTP %d", code)
	}
	if d := ready.Durability; d.Sync != config.SyncAlways || len(d.AtRisk) != 0 || d.EventsHold() != 0 {
		t.Errorf("durability = %+v (hold %v), want sync always from the metadata, nothing at risk", d, d.EventsHold())
	}
	st2, err := h2.js.Stream(t.Context(), hjs.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := st2.CachedInfo().Config.MaxAge; got != cfg2.Streams.MaxAge {
		t.Errorf("max_age = %v, want the updated %v", got, cfg2.Streams.MaxAge)
	}
}
