package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookjet/hookjet/outbox"
)

// setup creates a database holding the outbox table and returns its DSN.
func setup(t *testing.T, table string) string {
	t.Helper()
	pg := needPG(t)
	name := strings.ToLower(strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	dsn := pg.CreateDB(t, name)
	ddl, err := outbox.Schema(table)
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dsn)
	if strings.Contains(table, ".") {
		if _, err := conn.Exec(context.Background(), "CREATE SCHEMA "+strings.Split(table, ".")[0]); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // idempotent
		if _, err := conn.Exec(context.Background(), ddl); err != nil {
			t.Fatalf("schema: %v\n%s", err, ddl)
		}
	}
	return dsn
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func ids(t *testing.T, conn *pgx.Conn, table string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT id FROM "+table+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// noNotification fails if a NOTIFY is waiting on conn.
func noNotification(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if n, err := conn.WaitForNotification(ctx); err == nil {
		t.Fatalf("unexpected notification %+v", n)
	}
}

func notified(t *testing.T, conn *pgx.Conn, channel string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	if n.Channel != channel {
		t.Fatalf("notification on %q, want %q", n.Channel, channel)
	}
}

func TestInsertCommitsWithTheTransactionOnly(t *testing.T) {
	for _, table := range []string{"hookjet_outbox", "app.events_out"} {
		t.Run(table, func(t *testing.T) {
			dsn := setup(t, table)
			ctx := context.Background()
			listener := connect(t, dsn)
			if _, err := listener.Exec(ctx, "LISTEN "+pgx.Identifier{table}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			conn := connect(t, dsn)

			// database/sql, rolled back: no row, no NOTIFY.
			stx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := outbox.InsertInto(ctx, stx, table, "order.created", "sql-rolled-back", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			if err := stx.Rollback(); err != nil {
				t.Fatal(err)
			}
			noNotification(t, listener)
			// pgx, rolled back.
			ptx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := outbox.InsertInto(ctx, ptx, table, "order.created", "pgx-rolled-back", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			if err := ptx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			noNotification(t, listener)
			if got := ids(t, conn, table); len(got) != 0 {
				t.Fatalf("rolled back rows present: %v", got)
			}

			// Both committed: rows and a NOTIFY each.
			stx, err = db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := outbox.InsertInto(ctx, stx, table, "order.created", "sql-committed", []byte(`{"a":1}`)); err != nil {
				t.Fatal(err)
			}
			if err := stx.Commit(); err != nil {
				t.Fatal(err)
			}
			notified(t, listener, table)
			ptx, err = conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := outbox.InsertInto(ctx, ptx, table, "order.paid", "pgx-committed", nil); err != nil {
				t.Fatal(err)
			}
			if err := ptx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			notified(t, listener, table)
			if got := strings.Join(ids(t, conn, table), ","); got != "pgx-committed,sql-committed" {
				t.Fatalf("rows = %s", got)
			}
			var payload []byte
			var created time.Time
			if err := conn.QueryRow(ctx, "SELECT payload, created_at FROM "+table+" WHERE id = 'sql-committed'").Scan(&payload, &created); err != nil {
				t.Fatal(err)
			}
			if string(payload) != `{"a":1}` || time.Since(created) > time.Minute {
				t.Fatalf("payload %q created %s", payload, created)
			}
		})
	}
}

func TestInsertRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	dsn := setup(t, "hookjet_outbox")
	conn := connect(t, dsn)
	tests := []struct {
		name    string
		tx      any
		typ, id string
		want    error
	}{
		{"wildcard type", conn, "order.*", "x", outbox.ErrRow},
		{"hookjet's own type", conn, "hookjet.dead_letter", "x", outbox.ErrRow},
		{"empty token", conn, "order..created", "x", outbox.ErrRow},
		{"empty id", conn, "order.created", "", outbox.ErrRow},
		{"id with newline", conn, "order.created", "a\nb", outbox.ErrRow},
		{"not a transaction", "tx", "order.created", "x", outbox.ErrTx},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := outbox.Insert(ctx, tt.tx, tt.typ, tt.id, nil); !errors.Is(err, tt.want) {
				t.Fatalf("Insert = %v, want %v", err, tt.want)
			}
		})
	}
	if err := outbox.Insert(ctx, conn, "order.created", "dup", nil); err != nil {
		t.Fatal(err)
	}
	if err := outbox.Insert(ctx, conn, "order.created", "dup", nil); err == nil {
		t.Fatal("second insert of one id succeeded")
	}
	if err := outbox.InsertInto(ctx, conn, `x"; drop table y; --`, "order.created", "z", nil); err == nil {
		t.Fatal("InsertInto accepted an unsafe table name")
	}
}

func TestSchemaRefusesUnsafeNames(t *testing.T) {
	for _, name := range []string{"", "Outbox", `a"b`, "a.b.c", "1x", "a;b"} {
		if _, err := outbox.Schema(name); err == nil {
			t.Errorf("Schema(%q) succeeded", name)
		}
	}
}
