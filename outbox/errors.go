package outbox

import "errors"

var (
	// ErrPostgres wraps failures talking to PostgreSQL (connecting, claiming,
	// deleting, committing). The relay retries them with backoff.
	ErrPostgres = errors.New("outbox: postgresql unavailable")
	// ErrNATS wraps failures to store a claimed row in JetStream (no PubAck).
	// The relay leaves such rows in the table and retries with backoff.
	ErrNATS = errors.New("outbox: nats unavailable")
	// ErrRefused is wrapped by a [Publisher] error meaning that this message
	// can never be stored as it is (for example it exceeds the NATS maximum
	// payload): the relay dead-letters the row instead of retrying it.
	ErrRefused = errors.New("outbox: message refused")
	// ErrTx is returned by [Insert] for a transaction that is neither a
	// [SQLExecer] (such as *sql.Tx) nor a [PgxExecer] (such as pgx.Tx).
	ErrTx = errors.New("outbox: unsupported transaction type")
	// ErrRow is wrapped by [Insert] errors for an event that the relay would
	// reject: an invalid event type or id.
	ErrRow = errors.New("outbox: invalid event")
)
