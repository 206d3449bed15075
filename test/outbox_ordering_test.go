package test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/outbox"
	"github.com/hookjet/hookjet/outbox/pgtest"
)

// insertKeyedRow inserts one order.created row with ordering key (nil:
// NULL) and tenant (nil: NULL).
func insertKeyedRow(t *testing.T, pg *pgtest.Server, id string, key, tenant *string) {
	t.Helper()
	pg.Exec(t, `INSERT INTO hookjet_outbox (id, event_type, payload, ordering_key, tenant) VALUES ($1, 'order.created', '\x7b7d', $2, $3)`, id, key, tenant)
}

// keyOf is the Hookjet-Ordering-Key of every request r got for id, "-"
// for a request without one.
func keyOf(r *receiver, id string) []string {
	var out []string
	for _, d := range r.deliveries() {
		if d.ID != id {
			continue
		}
		k := "-"
		if v := d.Header.Values("Hookjet-Ordering-Key"); len(v) > 0 {
			k = strings.Join(v, ",")
		}
		out = append(out, k)
	}
	return out
}

// The outbox's ordering_key column: a row's key reaches the endpoints as
// Hookjet-Ordering-Key, with its tenant when it has one; NULL is no key; a
// key that is not one is dead-lettered on _outbox with a reason naming the
// column, and reaches no one.
func TestOutboxOrderingKeyColumn(t *testing.T) {
	pg := outboxDB(t)
	h, s, url := outboxTenantHookjet(t)
	startRelay(t, pg, url, "a")
	key, acme := "customer 7/ü", "acme"
	long, empty := strings.Repeat("k", 256), ""
	insertKeyedRow(t, pg, "k-key", &key, nil)
	insertKeyedRow(t, pg, "k-acme", &key, &acme)
	insertKeyedRow(t, pg, "k-none", nil, nil)
	insertKeyedRow(t, pg, "k-long", &long, nil)
	insertKeyedRow(t, pg, "k-empty", &empty, nil)
	insertKeyedRow(t, pg, "zz-last", nil, &acme) // once it arrived, so has everything before it
	waitAllDelivered(t, s.ops, []string{"k-key", "k-acme", "k-none", "zz-last"}, 30*time.Second)
	waitAllDelivered(t, s.acme, []string{"k-acme", "zz-last"}, 30*time.Second)
	tableEmpty(t, pg, 10*time.Second)

	for _, c := range []struct {
		r    *receiver
		id   string
		want string
	}{{s.ops, "k-key", key}, {s.ops, "k-acme", key}, {s.acme, "k-acme", key}, {s.ops, "k-none", "-"}} {
		if got := keyOf(c.r, c.id); len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: Hookjet-Ordering-Key per request %q, want [%q]", c.id, got, c.want)
		}
	}
	s.deliveredTo(t, "k-long")
	s.deliveredTo(t, "k-empty")
	dead := map[string]dlqEntry{}
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		for _, e := range h.dlq("") {
			dead[e.EventID+" "+e.Endpoint] = e
		}
		if len(dead) < 2 {
			return fmt.Errorf("dead letters %v, want the 2 rows with a bad key", dead)
		}
		return nil
	})
	for id, want := range map[string]string{"k-long": "ordering_key: must be at most 255 bytes", "k-empty": "ordering_key: is empty"} {
		e, ok := dead[id+" "+config.OutboxDLQEndpoint]
		if !ok || e.Reason != "rejected" || !strings.Contains(e.LastError, want) {
			t.Errorf("dead letter of %s = %+v (found: %v), want reason rejected and last_error about %q", id, e, ok, want)
		}
	}
}

// A table created before the ordering_key column (with the tenant column)
// keeps relaying, without keys, and the relay says how to add the column;
// once `hookjet outbox schema` has run again the running relay carries the
// key of new rows.
func TestOutboxTableWithoutOrderingKeyColumnStillRelays(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Exec(t, legacyOutboxDDL)
	pg.Exec(t, `ALTER TABLE hookjet_outbox ADD COLUMN tenant text`)
	_, s, url := outboxTenantHookjet(t)
	logs := &syncBuffer{t: t}
	startRelay(t, pg, url, "legacy", outbox.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))

	pg.Exec(t, `INSERT INTO hookjet_outbox (id, event_type, payload, tenant) VALUES ('old-1', 'order.created', '\x7b7d', 'acme')`)
	waitAllDelivered(t, s.acme, []string{"old-1"}, 30*time.Second)
	tableEmpty(t, pg, 10*time.Second)
	if l := logs.String(); !strings.Contains(l, "no ordering_key column") || !strings.Contains(l, `ALTER TABLE \"hookjet_outbox\" ADD COLUMN IF NOT EXISTS ordering_key text`) {
		t.Errorf("the relay did not say that keys are off and how to add the column; its log:\n%s", l)
	}
	if strings.Contains(logs.String(), "no tenant column") {
		t.Error("the relay says the table has no tenant column; it has")
	}

	ddl, err := outbox.Schema(config.DefaultOutboxTable)
	if err != nil {
		t.Fatal(err)
	}
	pg.Exec(t, ddl)
	key := "c-9"
	insertKeyedRow(t, pg, "new-key", &key, nil)
	waitAllDelivered(t, s.ops, []string{"old-1", "new-key"}, 30*time.Second)
	if got := keyOf(s.ops, "old-1"); len(got) != 1 || got[0] != "-" {
		t.Errorf("old-1: Hookjet-Ordering-Key per request %q, want none", got)
	}
	if got := keyOf(s.ops, "new-key"); len(got) != 1 || got[0] != key {
		t.Errorf("new-key: Hookjet-Ordering-Key per request %q, want [%q]", got, key)
	}
	if l := logs.String(); !strings.Contains(l, "has the ordering_key column") {
		t.Errorf("the relay did not say that keys are on once the column was added; its log:\n%s", l)
	}
}
