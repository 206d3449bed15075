package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// tenantState is whether the outbox table has the tenant column. A table
// created before the column existed keeps working without it: its events
// are published without a tenant until the column is added.
type tenantState struct {
	on    bool // the claim reads the column
	known bool // detected at least once (for logging changes only)
}

// tenantColumnSQL reports whether the table $1 (a quoted, possibly
// qualified name, resolved like the claim's) has a column named tenant.
const tenantColumnSQL = `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
	WHERE attrelid = to_regclass($1) AND attname = 'tenant' AND attnum > 0 AND NOT attisdropped)`

// claimSQL is the claim of a batch: $1 rows, with a cursor after $2 when
// after is set, and the tenant column when tenant is set.
func (t table) claimSQL(tenant, after bool) string {
	q := "SELECT id, event_type, payload, headers, created_at"
	if tenant {
		q += ", tenant::text"
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

// detectTenant looks for the tenant column on a new connection and logs
// when that changes what the relay does.
func (r *Relay) detectTenant(ctx context.Context, conn *pgx.Conn) error {
	var has bool
	if err := conn.QueryRow(ctx, tenantColumnSQL, r.table.quoted).Scan(&has); err != nil {
		return fmt.Errorf("%w: look for the tenant column: %w", ErrPostgres, err)
	}
	r.setTenants(has)
	return nil
}

// tenantAdded reports whether the tenant column has appeared since the
// relay last looked, from within the batch's transaction once its claim
// holds a lock on the table: ALTER TABLE cannot add the column before that
// transaction ends, so a row claimed without the column was written
// without one, and a row written with one is claimed again with it.
func (r *Relay) tenantAdded(ctx context.Context, tx pgx.Tx) (bool, error) {
	var has bool
	if err := tx.QueryRow(ctx, tenantColumnSQL, r.table.quoted).Scan(&has); err != nil {
		return false, fmt.Errorf("%w: look for the tenant column: %w", ErrPostgres, err)
	}
	if has {
		r.setTenants(true)
	}
	return has, nil
}

func (r *Relay) setTenants(has bool) {
	if r.tenants.known && r.tenants.on == has {
		return
	}
	r.tenants = tenantState{on: has, known: true}
	if has {
		r.log.Info("outbox: table has the tenant column: events carry their row's tenant (Hookjet-Tenant)", "table", r.table.name)
		return
	}
	r.log.Warn("outbox: table has no tenant column: tenants are off, every event is published without a tenant until it is added",
		"table", r.table.name, "add_it_with", r.table.addTenantSQL())
}
