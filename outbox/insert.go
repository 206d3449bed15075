package outbox

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookjet/hookjet/config"
)

// SQLExecer is the part of a database/sql transaction (*sql.Tx, or *sql.Conn
// and *sql.DB outside one) that [Insert] uses.
type SQLExecer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// PgxExecer is the part of a pgx transaction (pgx.Tx, or *pgx.Conn and
// *pgxpool.Pool outside one) that [Insert] uses.
type PgxExecer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Insert writes one event into the default outbox table, hookjet_outbox, in
// tx: a [SQLExecer] such as *sql.Tx or a [PgxExecer] such as pgx.Tx (any
// other value returns [ErrTx]). The event is published to
// hookjet.events.<eventType> once tx commits, with Nats-Msg-Id (and so
// webhook-id) id; if tx rolls back it never is. An id that is already in the
// table fails with PostgreSQL's unique violation. eventType and id are
// checked first ([ErrRow]).
func Insert(ctx context.Context, tx any, eventType, id string, payload []byte) error {
	return InsertInto(ctx, tx, config.DefaultOutboxTable, eventType, id, payload)
}

// InsertInto is [Insert] into the outbox table named table.
func InsertInto(ctx context.Context, tx any, table, eventType, id string, payload []byte) error {
	t, err := newTable(table)
	if err != nil {
		return err
	}
	if err := config.CheckPublishable(eventType); err != nil { // hookjet.* is hookjet's own
		return fmt.Errorf("%w: event_type: %w", ErrRow, err)
	}
	if err := checkID(id); err != nil {
		return fmt.Errorf("%w: %w", ErrRow, err)
	}
	if payload == nil {
		payload = []byte{} // NOT NULL: an empty body is still a body
	}
	q := "INSERT INTO " + t.quoted + " (id, event_type, payload) VALUES ($1, $2, $3)"
	switch x := tx.(type) {
	case SQLExecer:
		_, err = x.ExecContext(ctx, q, id, eventType, payload)
	case PgxExecer:
		_, err = x.Exec(ctx, q, id, eventType, payload)
	default:
		return fmt.Errorf("%w: %T", ErrTx, tx)
	}
	if err != nil {
		return fmt.Errorf("outbox insert: %w", err)
	}
	return nil
}
