package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// columns says which optional columns the outbox table has: tenant (the
// event's Hookjet-Tenant) and ordering_key (its Hookjet-Ordering-Key). A
// table created before a column existed keeps working without it: its
// events are published without a tenant, or without a key, until the
// column is added.
type columns struct {
	tenant bool // the claim reads the tenant column
	key    bool // the claim reads the ordering_key column
	known  bool // detected at least once (for logging changes only)
}

// all reports whether the table has every optional column.
func (c columns) all() bool { return c.tenant && c.key }

// columnsSQL reports whether the table $1 (a quoted, possibly qualified
// name, resolved like the claim's) has a column named tenant, and one named
// ordering_key.
const columnsSQL = `SELECT
	EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
		WHERE attrelid = to_regclass($1) AND attname = 'tenant' AND attnum > 0 AND NOT attisdropped),
	EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
		WHERE attrelid = to_regclass($1) AND attname = 'ordering_key' AND attnum > 0 AND NOT attisdropped)`

// claimSQL is the claim of a batch: $1 rows, with a cursor after $2 when
// after is set, and the optional columns the table has.
func (t table) claimSQL(c columns, after bool) string {
	q := "SELECT id, event_type, payload, headers, created_at"
	if c.tenant {
		q += ", tenant::text"
	}
	if c.key {
		q += ", ordering_key::text"
	}
	q += " FROM " + t.quoted
	if after {
		q += " WHERE id > $2"
	}
	return q + " ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"
}

// addTenantSQL adds the tenant column to an outbox table created without it.
func (t table) addTenantSQL() string {
	return "ALTER TABLE " + t.quoted + " ADD COLUMN IF NOT EXISTS tenant text;"
}

// addKeySQL adds the ordering_key column to an outbox table created
// without it.
func (t table) addKeySQL() string {
	return "ALTER TABLE " + t.quoted + " ADD COLUMN IF NOT EXISTS ordering_key text;"
}

// detectColumns looks for the optional columns on a new connection and logs
// when that changes what the relay does.
func (r *Relay) detectColumns(ctx context.Context, conn *pgx.Conn) error {
	var c columns
	if err := conn.QueryRow(ctx, columnsSQL, r.table.quoted).Scan(&c.tenant, &c.key); err != nil {
		return fmt.Errorf("%w: look for the tenant and ordering_key columns: %w", ErrPostgres, err)
	}
	r.setColumns(c)
	return nil
}

// columnsAdded reports whether an optional column has appeared since the
// relay last looked, from within the batch's transaction once its claim
// holds a lock on the table: ALTER TABLE cannot add the column before that
// transaction ends, so a row claimed without the column was written
// without one, and a row written with one is claimed again with it.
func (r *Relay) columnsAdded(ctx context.Context, tx pgx.Tx) (bool, error) {
	var c columns
	if err := tx.QueryRow(ctx, columnsSQL, r.table.quoted).Scan(&c.tenant, &c.key); err != nil {
		return false, fmt.Errorf("%w: look for the tenant and ordering_key columns: %w", ErrPostgres, err)
	}
	added := c.tenant && !r.cols.tenant || c.key && !r.cols.key
	if added {
		// A column is never dropped under a running relay's feet by
		// hookjet; one that is, fails the claim and is seen at the next
		// connection.
		c.tenant, c.key = c.tenant || r.cols.tenant, c.key || r.cols.key
		r.setColumns(c)
	}
	return added, nil
}

func (r *Relay) setColumns(c columns) {
	was := r.cols
	c.known = true
	r.cols = c
	if !was.known || was.tenant != c.tenant {
		if c.tenant {
			r.log.Info("outbox: table has the tenant column: events carry their row's tenant (Hookjet-Tenant)", "table", r.table.name)
		} else {
			r.log.Warn("outbox: table has no tenant column: tenants are off, every event is published without a tenant until it is added",
				"table", r.table.name, "add_it_with", r.table.addTenantSQL())
		}
	}
	if !was.known || was.key != c.key {
		if c.key {
			r.log.Info("outbox: table has the ordering_key column: events carry their row's ordering key (Hookjet-Ordering-Key)", "table", r.table.name)
		} else {
			r.log.Info("outbox: table has no ordering_key column: every event is published without an ordering key until it is added",
				"table", r.table.name, "add_it_with", r.table.addKeySQL())
		}
	}
}
