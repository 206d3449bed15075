package outbox

import (
	"fmt"
	"strings"

	"github.com/hookjet/hookjet/config"
)

// table is a checked outbox table name and the SQL derived from it.
type table struct {
	name    string // as configured: "hookjet_outbox" or "app.outbox"
	quoted  string // "app"."outbox"
	channel string // the NOTIFY channel: the configured name
}

func newTable(name string) (table, error) {
	if err := config.CheckTable(name); err != nil {
		return table{}, fmt.Errorf("outbox table: %w", err)
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = `"` + p + `"`
	}
	return table{name: name, quoted: strings.Join(parts, "."), channel: name}, nil
}

// relName is the unqualified table name; schema the qualifier with its dot,
// or "".
func (t table) relName() (schema, rel string) {
	if i := strings.LastIndexByte(t.name, '.'); i >= 0 {
		return `"` + t.name[:i] + `".`, t.name[i+1:]
	}
	return "", t.name
}

// Schema returns the DDL of the outbox table named table (see
// [config.CheckTable]; "hookjet_outbox" by default): the table, an index on
// created_at for the lag query, and a statement trigger that sends NOTIFY on
// a channel named like the table. It is idempotent and needs PostgreSQL 14
// or later. It also adds the nullable tenant and ordering_key columns to a
// table created before they existed, so running it again upgrades an older
// table.
func Schema(tableName string) (string, error) {
	t, err := newTable(tableName)
	if err != nil {
		return "", err
	}
	schema, rel := t.relName()
	return fmt.Sprintf(`-- hookjet transactional outbox: insert (id, event_type, payload[, tenant][, ordering_key]) in
-- the transaction of the business change; hookjet outbox relays committed rows.
CREATE TABLE IF NOT EXISTS %[1]s (
    id           text        PRIMARY KEY,              -- Nats-Msg-Id, so the webhook-id
    event_type   text        NOT NULL,                 -- published to hookjet.events.<event_type>
    payload      bytea       NOT NULL,                 -- the webhook body, unchanged
    headers      jsonb,                                -- optional: {"Content-Type": "application/json"}
    created_at   timestamptz NOT NULL DEFAULT now(),
    tenant       text,                                 -- optional: the event's tenant (Hookjet-Tenant); NULL: none
    ordering_key text                                  -- optional: the event's ordering key (Hookjet-Ordering-Key); NULL: none
);
-- A table created without the tenant or ordering_key column: add it (the
-- relay reads it once it is there; until then every event is published
-- without a tenant, or without a key).
%[5]s
%[6]s
CREATE INDEX IF NOT EXISTS "%[3]s_created_at_idx" ON %[1]s (created_at);
CREATE OR REPLACE FUNCTION %[2]s"%[3]s_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('%[4]s', '');
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER "%[3]s_notify" AFTER INSERT ON %[1]s
    FOR EACH STATEMENT EXECUTE FUNCTION %[2]s"%[3]s_notify"();
`, t.quoted, schema, rel, t.channel, t.addTenantSQL(), t.addKeySQL()), nil
}
