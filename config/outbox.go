package config

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Outbox configures the transactional outbox relay (`hookjet outbox`, or
// `hookjet serve` when DSN is set), which moves rows of an application's
// PostgreSQL table into JetStream.
type Outbox struct {
	// DSN is the PostgreSQL connection string (postgres://... or
	// "host=... dbname=..."); usually env:NAME or file:/path since it holds a
	// password. Empty (the default) means no relay.
	DSN Secret `yaml:"dsn"`
	// Table is the outbox table, optionally schema-qualified ("app.outbox"):
	// lower-case letters, digits and underscores. Default "hookjet_outbox".
	Table string `yaml:"table"`
	// Batch is the most rows claimed, published and deleted in one
	// transaction, 1..10000. Default 500.
	Batch int `yaml:"batch"`
	// Poll is how often the relay looks for rows when no NOTIFY woke it.
	// Default 1s.
	Poll time.Duration `yaml:"poll"`
}

// Outbox defaults and limits.
const (
	DefaultOutboxTable = "hookjet_outbox"
	maxOutboxBatch     = 10000
	// maxTableName leaves room for the "_created_at_idx" suffix of the index
	// name within PostgreSQL's 63-byte identifiers.
	maxTableName = 48
	// OutboxDLQEndpoint is the endpoint name under which rejected outbox rows
	// are dead-lettered (hookjet.dlq._outbox); no endpoint may use it.
	OutboxDLQEndpoint = "_outbox"
)

func defaultOutbox() Outbox {
	return Outbox{Table: DefaultOutboxTable, Batch: 500, Poll: time.Second}
}

// validateOutbox checks the outbox section. (checkID keeps endpoints off the
// name outbox rejects are dead-lettered under.)
func (c *Config) validateOutbox(p *problems) {
	o := c.Outbox
	if err := CheckTable(o.Table); err != nil {
		p.add("outbox.table", "%w", err)
	}
	if o.Batch < 1 || o.Batch > maxOutboxBatch {
		p.add("outbox.batch", "must be between 1 and %d, got %d", maxOutboxBatch, o.Batch)
	}
	if o.Poll <= 0 {
		p.add("outbox.poll", "must be positive, got %s", o.Poll)
	}
}

// CheckTable checks an outbox table name: an unquoted PostgreSQL identifier
// of lower-case letters, digits and underscores, not starting with a digit,
// at most 48 bytes, optionally qualified by a schema ("app.outbox"). Such a
// name is safe to quote into SQL.
func CheckTable(table string) error {
	if table == "" {
		return errors.New("must not be empty")
	}
	parts := strings.Split(table, ".")
	if len(parts) > 2 {
		return fmt.Errorf("%q: at most one schema qualifier (schema.table)", table)
	}
	if len(table) > 63 {
		// The whole name is the NOTIFY channel, and PostgreSQL refuses a
		// longer channel name on every insert.
		return fmt.Errorf("%q: at most 63 bytes with its schema (it names the NOTIFY channel), got %d", table, len(table))
	}
	for i, part := range parts {
		limit := maxTableName
		if len(parts) == 2 && i == 0 {
			limit = 63 // a schema name gets no suffix
		}
		if err := checkIdent(part, limit); err != nil {
			return fmt.Errorf("%q: %w", table, err)
		}
	}
	return nil
}

// checkIdent checks one identifier: [a-z_][a-z0-9_]*, at most limit bytes.
func checkIdent(s string, limit int) error {
	switch {
	case s == "":
		return errors.New("empty name")
	case len(s) > limit:
		return fmt.Errorf("name longer than %d bytes", limit)
	case s[0] >= '0' && s[0] <= '9':
		return errors.New("name starts with a digit")
	}
	for i := range len(s) {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return errors.New("use only a-z, 0-9 and _")
		}
	}
	return nil
}

// ValidHeaderName reports whether s is an RFC 9110 token, the syntax of a
// header name (used for outbox rows' headers too).
func ValidHeaderName(s string) bool { return validHeaderName(s) }
