package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookjet/hookjet/config"
)

// relayBatch claims up to a batch of rows, publishes them, deletes those
// JetStream acknowledged and commits. It returns the number of rows claimed.
// A batch already claimed is finished even when ctx is cancelled (within
// batchTimeout), so that a shutdown republishes nothing.
func (r *Relay) relayBatch(ctx context.Context, conn *pgx.Conn) (int, error) {
	start := time.Now()
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), batchTimeout)
	defer cancel()
	if ctx.Err() != nil {
		return 0, nil
	}
	tx, err := conn.Begin(bctx)
	if err != nil {
		return 0, fmt.Errorf("%w: begin: %w", ErrPostgres, err)
	}
	defer func() {
		if err := tx.Rollback(bctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			r.log.Debug("outbox: rollback", "err", err)
		}
	}()
	var due []string // held rows whose hold has passed: deleted now
	if r.hold > 0 {
		due = r.held.due(start, r.hold)
	}
	rows, err := r.claim(bctx, tx)
	if err != nil || (len(rows) == 0 && len(due) == 0) {
		return 0, err
	}
	msgs := make([]Message, 0, len(rows))
	for _, row := range rows {
		if _, ok := r.held.acked[row.id]; ok {
			continue // acknowledged already, waiting out its hold
		}
		msgs = append(msgs, message(row, r.maxPayload))
	}
	done, tally, pubErr := r.publish(bctx, msgs)
	if r.hold > 0 {
		ackAt := time.Now()
		for _, id := range done {
			r.held.acked[id] = ackAt
		}
		done = due
	}
	if len(done) > 0 {
		if _, err := tx.Exec(bctx, r.deleteSQL, done); err != nil {
			return 0, fmt.Errorf("%w: delete: %w", ErrPostgres, err)
		}
		if err := tx.Commit(bctx); err != nil {
			return 0, fmt.Errorf("%w: commit: %w", ErrPostgres, err)
		}
		for _, id := range due {
			delete(r.held.acked, id)
		}
	}
	r.m.relayed.Add(float64(tally.relayed))
	r.m.rejected.Add(float64(tally.rejected))
	r.m.duplicates.Add(float64(tally.duplicates))
	r.m.batch.Observe(time.Since(start).Seconds())
	for _, m := range tally.log {
		r.log.Warn("outbox: row rejected and dead-lettered to "+config.OutboxDLQEndpoint, "id", m.ID, "event_type", m.EventType, "reason", m.Reject)
	}
	if pubErr != nil {
		return len(rows), fmt.Errorf("%w: %d of %d rows not acknowledged: %w", ErrNATS, len(rows)-len(done), len(rows), pubErr)
	}
	return len(rows), nil
}

// claim locks and reads up to a batch of rows that no other relay holds
// (with a hold: after the cursor, which it advances). While the table has
// no tenant or no ordering_key column it checks, once rows are locked,
// whether the column has appeared meanwhile (see columnsAdded), and claims
// again with it if so.
func (r *Relay) claim(ctx context.Context, tx pgx.Tx) ([]row, error) {
	out, err := r.claimRows(ctx, tx)
	if err == nil && len(out) > 0 && !r.cols.all() {
		var added bool
		if added, err = r.columnsAdded(ctx, tx); added {
			out, err = r.claimRows(ctx, tx)
		}
	}
	if err != nil {
		return nil, err
	}
	if r.hold > 0 {
		last := ""
		if len(out) > 0 {
			last = out[len(out)-1].id
		}
		r.held.advance(len(out), r.batch, last, time.Now(), r.poll)
	}
	return out, nil
}

// claimRows runs the claim: with the tenant and ordering_key columns when
// the table has them.
func (r *Relay) claimRows(ctx context.Context, tx pgx.Tx) ([]row, error) {
	args := []any{r.batch}
	if r.hold > 0 {
		args = append(args, r.held.cursor)
	}
	rs, err := tx.Query(ctx, r.table.claimSQL(r.cols, r.hold > 0), args...)
	if err != nil {
		return nil, fmt.Errorf("%w: claim: %w", ErrPostgres, err)
	}
	out := make([]row, 0, r.batch)
	var rw row
	dest := []any{&rw.id, &rw.eventType, &rw.payload, &rw.headers, &rw.createdAt}
	if r.cols.tenant {
		dest = append(dest, &rw.tenant)
	}
	if r.cols.key {
		dest = append(dest, &rw.key)
	}
	_, err = pgx.ForEachRow(rs, dest, func() error {
		out = append(out, rw)
		rw = row{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: claim: %w", ErrPostgres, err)
	}
	return out, nil
}

// tally counts what a batch did.
type tally struct {
	relayed, rejected, duplicates int
	log                           []Message // rejected rows, to log after the commit
}

// publish publishes msgs and returns the ids JetStream acknowledged. A
// message the publisher refuses for good goes out again as a dead letter.
// pubErr is the first failure that leaves a row in the table.
func (r *Relay) publish(ctx context.Context, msgs []Message) (done []string, t tally, pubErr error) {
	acks := r.pub.Publish(ctx, msgs)
	var refused []Message
	for i, a := range acks {
		m := msgs[i]
		switch {
		case a.Err == nil:
			done = append(done, m.ID)
			t.count(m, a)
		case errors.Is(a.Err, ErrRefused) && m.Reject == "":
			m.Reject = a.Err.Error()
			refused = append(refused, m)
		case pubErr == nil:
			pubErr = a.Err
		}
	}
	if len(refused) == 0 {
		return done, t, pubErr
	}
	for i, a := range r.pub.Publish(ctx, refused) {
		if a.Err == nil {
			done = append(done, refused[i].ID)
			t.count(refused[i], a)
		} else if pubErr == nil {
			pubErr = a.Err
		}
	}
	return done, t, pubErr
}

func (t *tally) count(m Message, a Ack) {
	if m.Reject != "" {
		t.rejected++
		t.log = append(t.log, m)
	} else {
		t.relayed++
	}
	if a.Duplicate {
		t.duplicates++
	}
}
