package test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/outbox"
	"github.com/hookjet/hookjet/outbox/pgtest"
)

// tenantSinks are the receivers of outboxTenantHookjet's endpoints: ops has
// no tenant (the operator's), acme and globex are those tenants'.
type tenantSinks struct{ ops, acme, globex *receiver }

// outboxTenantHookjet runs hookjet with an operator endpoint and one
// endpoint each of tenants acme and globex, all for every event type.
func outboxTenantHookjet(t *testing.T) (*hookjet, tenantSinks, string) {
	t.Helper()
	s := tenantSinks{newReceiver(t, []string{secretA, secretB}, nil), newReceiver(t, []string{secretA, secretB}, nil), newReceiver(t, []string{secretA, secretB}, nil)}
	cfg := testConfig(t, t.TempDir(), "",
		endpointYAML{ID: "ops", URL: s.ops.URL},
		endpointYAML{ID: "acme-crm", URL: s.acme.URL, Extra: "    tenant: acme\n"},
		endpointYAML{ID: "globex-crm", URL: s.globex.URL, Extra: "    tenant: globex\n"})
	h := startHookjet(t, cfg, cli.Options{})
	return h, s, "nats://" + cfg.NATS.Listen
}

// insertTenantRow inserts one order.created row with tenant (nil: NULL).
func insertTenantRow(t *testing.T, pg *pgtest.Server, id string, tenant *string) {
	t.Helper()
	pg.Exec(t, `INSERT INTO hookjet_outbox (id, event_type, payload, tenant) VALUES ($1, 'order.created', '\x7b7d', $2)`, id, tenant)
}

// deliveredTo checks which receivers got id: exactly those in want.
func (s tenantSinks) deliveredTo(t *testing.T, id string, want ...*receiver) {
	t.Helper()
	for name, r := range map[string]*receiver{"ops": s.ops, "acme": s.acme, "globex": s.globex} {
		wanted := false
		for _, w := range want {
			wanted = wanted || w == r
		}
		if n := r.requestsFor(id); wanted && n != 1 || !wanted && n != 0 {
			t.Errorf("event %s reached %s's endpoint %d times, want %d", id, name, n, map[bool]int{true: 1}[wanted])
		}
	}
}

// The outbox's tenant column: a row of tenant acme reaches acme's endpoint
// and the operator's, never globex's; a row without a tenant only the
// operator's; a row whose tenant is not a tenant reaches no one and is
// dead-lettered on _outbox with a reason naming the column.
func TestOutboxTenantColumnRoutesRows(t *testing.T) {
	pg := outboxDB(t)
	h, s, url := outboxTenantHookjet(t)
	relay := startRelay(t, pg, url, "a")
	acme, globex := "acme", "globex"
	bad, empty := "Acme", ""
	insertTenantRow(t, pg, "t-acme", &acme)
	insertTenantRow(t, pg, "t-globex", &globex)
	insertTenantRow(t, pg, "t-none", nil)
	insertTenantRow(t, pg, "t-bad", &bad)
	insertTenantRow(t, pg, "t-empty", &empty)
	// Last rows, one per receiver: once they arrived, anything published
	// before them has arrived too (or never will).
	insertTenantRow(t, pg, "zz-acme", &acme)
	insertTenantRow(t, pg, "zz-globex", &globex)
	insertTenantRow(t, pg, "zz-none", nil)
	waitAllDelivered(t, s.ops, []string{"t-acme", "t-globex", "t-none", "zz-acme", "zz-globex", "zz-none"}, 30*time.Second)
	waitAllDelivered(t, s.acme, []string{"t-acme", "zz-acme"}, 30*time.Second)
	waitAllDelivered(t, s.globex, []string{"t-globex", "zz-globex"}, 30*time.Second)
	tableEmpty(t, pg, 10*time.Second)

	s.deliveredTo(t, "t-acme", s.ops, s.acme)
	s.deliveredTo(t, "t-globex", s.ops, s.globex)
	s.deliveredTo(t, "t-none", s.ops)
	s.deliveredTo(t, "t-bad")
	s.deliveredTo(t, "t-empty")

	dead := map[string]dlqEntry{}
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		for _, e := range h.dlq("") {
			dead[e.EventID+" "+e.Endpoint] = e
		}
		if len(dead) < 2 {
			return fmt.Errorf("dead letters %v, want the 2 rows with a bad tenant", dead)
		}
		return nil
	})
	if len(dead) != 2 {
		t.Errorf("dead letters %v, want only the 2 rows with a bad tenant", dead)
	}
	for id, want := range map[string]string{"t-bad": `tenant: "Acme" may contain only`, "t-empty": "tenant: is empty"} {
		e, ok := dead[id+" "+config.OutboxDLQEndpoint]
		if !ok || e.Reason != "rejected" || !strings.Contains(e.LastError, want) {
			t.Errorf("dead letter of %s = %+v (found: %v), want reason rejected and last_error about %q", id, e, ok, want)
		}
	}
	if got := relay.counter(t, "hookjet_outbox_rejected_total"); got != 2 {
		t.Errorf("hookjet_outbox_rejected_total = %v, want 2", got)
	}
}

// legacyOutboxDDL is the outbox table as `hookjet outbox schema` printed it
// before the tenant column existed.
const legacyOutboxDDL = `CREATE TABLE hookjet_outbox (
    id         text        PRIMARY KEY,
    event_type text        NOT NULL,
    payload    bytea       NOT NULL,
    headers    jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX "hookjet_outbox_created_at_idx" ON hookjet_outbox (created_at);
CREATE FUNCTION "hookjet_outbox_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('hookjet_outbox', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER "hookjet_outbox_notify" AFTER INSERT ON hookjet_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION "hookjet_outbox_notify"();
`

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	t  testing.TB
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// An outbox table created before the tenant column keeps relaying, to the
// operator's endpoints only, and the relay says that tenants are off and
// how to turn them on. Once `hookjet outbox schema` has run again (which
// adds the column) the running relay carries the tenant of new rows.
func TestOutboxTableWithoutTenantColumnStillRelays(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Exec(t, legacyOutboxDDL)
	_, s, url := outboxTenantHookjet(t)
	logs := &syncBuffer{t: t}
	startRelay(t, pg, url, "legacy", outbox.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))

	pg.Exec(t, `INSERT INTO hookjet_outbox (id, event_type, payload) VALUES ('old-1', 'order.created', '\x7b7d'), ('old-2', 'order.created', '\x7b7d')`)
	waitAllDelivered(t, s.ops, []string{"old-1", "old-2"}, 30*time.Second)
	tableEmpty(t, pg, 10*time.Second)
	if l := logs.String(); !strings.Contains(l, "no tenant column") || !strings.Contains(l, `ALTER TABLE \"hookjet_outbox\" ADD COLUMN IF NOT EXISTS tenant text`) {
		t.Errorf("the relay did not say that tenants are off and how to add the column; its log:\n%s", l)
	}

	ddl, err := outbox.Schema(config.DefaultOutboxTable)
	if err != nil {
		t.Fatal(err)
	}
	pg.Exec(t, ddl)
	acme := "acme"
	insertTenantRow(t, pg, "new-acme", &acme)
	insertTenantRow(t, pg, "new-none", nil)
	waitAllDelivered(t, s.ops, []string{"new-acme", "new-none"}, 30*time.Second)
	waitAllDelivered(t, s.acme, []string{"new-acme"}, 30*time.Second)
	insertTenantRow(t, pg, "zz-acme", &acme) // everything before it has arrived once it has
	waitAllDelivered(t, s.acme, []string{"zz-acme"}, 30*time.Second)

	s.deliveredTo(t, "old-1", s.ops)
	s.deliveredTo(t, "old-2", s.ops)
	s.deliveredTo(t, "new-acme", s.ops, s.acme)
	s.deliveredTo(t, "new-none", s.ops)
	if l := logs.String(); !strings.Contains(l, "has the tenant column") {
		t.Errorf("the relay did not say that tenants are on once the column was added; its log:\n%s", l)
	}
}
