package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/hookjet/hookjet/outbox"
)

// The order and its order.created event commit together, or neither does:
// once the transaction commits, `hookjet outbox` publishes the event with
// webhook-id "order-42-created".
func ExampleInsert() {
	ctx := context.Background()
	db, err := sql.Open("pgx", exampleDSN())
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback() // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, total_cents) VALUES ($1, $2)`, 42, 1999); err != nil {
		log.Fatal(err)
	}
	err = outbox.Insert(ctx, tx, "order.created", "order-42-created", []byte(`{"order":42,"total_cents":1999}`))
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}

	var eventType, payload string
	err = db.QueryRowContext(ctx, `SELECT event_type, convert_from(payload, 'UTF8') FROM hookjet_outbox WHERE id = $1`, "order-42-created").Scan(&eventType, &payload)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(eventType, payload)
	// Output: order.created {"order":42,"total_cents":1999}
}

// exampleDSN prepares a database for the example: the outbox table
// (outbox.Schema) and the application's own table.
func exampleDSN() string {
	ctx := context.Background()
	db, err := sql.Open("pgx", pg.DSN())
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ddl, err := outbox.Schema("hookjet_outbox")
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range []string{
		"DROP DATABASE IF EXISTS example", "CREATE DATABASE example",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			log.Fatal(err)
		}
	}
	dsn := pg.DSNFor("example")
	edb, err := sql.Open("pgx", dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer edb.Close()
	if _, err := edb.ExecContext(ctx, ddl+"CREATE TABLE orders (id int PRIMARY KEY, total_cents int NOT NULL);"); err != nil {
		log.Fatal(err)
	}
	return dsn
}
