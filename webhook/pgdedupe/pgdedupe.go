package pgdedupe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultTable is the table of processed ids unless New is told otherwise.
const DefaultTable = "hookjet_processed"

// Beginner starts transactions: *pgx.Conn and *pgxpool.Pool are ones.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Store is a [webhook.Store] over a PostgreSQL table. It is safe for
// concurrent use when db is (a pool).
type Store struct {
	db     Beginner
	table  string
	insert string
}

// New returns a Store keeping ids in table (DefaultTable when empty): an
// unquoted identifier of a-z, 0-9 and _, optionally schema-qualified.
func New(db Beginner, table string) (*Store, error) {
	if table == "" {
		table = DefaultTable
	}
	if err := checkTable(table); err != nil {
		return nil, err
	}
	return &Store{db: db, table: table,
		insert: "INSERT INTO " + table + " (id) VALUES ($1) ON CONFLICT (id) DO NOTHING"}, nil
}

// Schema is the DDL of the table (idempotent).
func Schema(table string) string {
	if table == "" {
		table = DefaultTable
	}
	return "CREATE TABLE IF NOT EXISTS " + table + " (\n" +
		"  id text PRIMARY KEY,\n" +
		"  processed_at timestamptz NOT NULL DEFAULT now()\n" +
		");\n"
}

func checkTable(t string) error {
	parts := strings.Split(t, ".")
	if len(parts) > 2 {
		return fmt.Errorf("pgdedupe: table %q: at most one schema qualifier", t)
	}
	for _, p := range parts {
		if p == "" || len(p) > 63 || (p[0] >= '0' && p[0] <= '9') {
			return fmt.Errorf("pgdedupe: table %q: not an identifier", t)
		}
		for i := range len(p) {
			if c := p[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
				return fmt.Errorf("pgdedupe: table %q: use only a-z, 0-9 and _", t)
			}
		}
	}
	return nil
}

// Process runs fn in a transaction that first inserts id, unless id was
// processed before (then it reports a duplicate and fn does not run). fn's
// effect and the mark commit together; when fn fails or the commit does,
// neither is kept and the retry is processed.
func (s *Store) Process(ctx context.Context, id string, fn func(ctx context.Context, tx pgx.Tx) error) (duplicate bool, err error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("pgdedupe: begin: %w", err)
	}
	defer func() {
		if rerr := tx.Rollback(context.WithoutCancel(ctx)); rerr != nil && !errors.Is(rerr, pgx.ErrTxClosed) && err == nil {
			err = fmt.Errorf("pgdedupe: rollback: %w", rerr)
		}
	}()
	var tag pgconn.CommandTag
	if tag, err = tx.Exec(ctx, s.insert, id); err != nil {
		return false, fmt.Errorf("pgdedupe: mark: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return true, nil // the deferred rollback ends the empty transaction
	}
	if err := fn(ctx, tx); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("pgdedupe: commit: %w", err)
	}
	return false, nil
}

type txKey struct{}

// Tx returns the transaction of the [Store.Once] call ctx belongs to.
func Tx(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	return tx, ok
}

// Once implements [webhook.Store]: fn finds its transaction with [Tx] and
// must do its effect in it.
func (s *Store) Once(ctx context.Context, id string, fn func(ctx context.Context) error) (bool, error) {
	return s.Process(ctx, id, func(ctx context.Context, tx pgx.Tx) error {
		return fn(context.WithValue(ctx, txKey{}, tx))
	})
}

// Expire deletes the ids processed more than age ago, returning how many;
// run it now and then (a sender's retries end after a day or so).
func (s *Store) Expire(ctx context.Context, age time.Duration) (int64, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, "DELETE FROM "+s.table+" WHERE processed_at < now() - $1::interval", fmt.Sprintf("%d microseconds", age.Microseconds()))
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), tx.Commit(ctx)
}
