package lane

import (
	"context"
	"errors"
	"fmt"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/hookjet/hookjet/backoff"
	"github.com/hookjet/hookjet/jetstream"
)

// The lane's owner holds the key "owner" of HOOKJET_ORDERING: it writes its
// id there every leaseRenew with a compare-and-set. Another process takes
// the key over once it has not changed for leaseTakeover; an owner that
// could not renew for leaseLost (shorter) stops delivering first, so two
// owners overlap only while a paused process has not yet noticed it was
// replaced (its attempt in flight may then repeat a delivery, never
// reorder one that has not been attempted). A clean stop deletes the key,
// so the next process takes over at once.
const (
	leaseKey      = "owner"
	leaseRenew    = time.Second
	leaseLost     = 3 * time.Second
	leaseTakeover = 5 * time.Second
)

// FirstLease seeks the lane's ownership once, within start's context
// (the term runs under loop), and returns the state RunLease goes on with;
// nil when the bucket could not be read (RunLease then seeks it).
func (l *Owner) FirstLease(start, loop context.Context) *Lease {
	ctx, cancel := context.WithTimeout(start, 5*time.Second)
	defer cancel()
	kv, err := l.o.JS.KeyValue(ctx, jetstream.LaneBucket)
	if err != nil {
		return nil
	}
	ls := &Lease{l: l, kv: kv, id: nuid.Next()}
	ls.step(loop)
	return ls
}

// RunLease keeps or seeks the lane's ownership until ctx ends, and runs the
// owner's term while it holds it; ls is where firstLease left off (nil:
// nothing yet).
func (l *Owner) RunLease(ctx context.Context, ls *Lease) {
	for ls == nil {
		kv, err := l.o.JS.KeyValue(ctx, jetstream.LaneBucket)
		if err == nil {
			ls = &Lease{l: l, kv: kv, id: nuid.Next()}
			ls.step(ctx)
			break
		}
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("bucket of the ordered lane's owner", "bucket", jetstream.LaneBucket, "err", err)
		backoff.Sleep(ctx, 2*time.Second)
	}
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			ls.let(ctx)
			return
		case <-t.C:
		}
		ls.step(ctx)
		l.gaugeHeld()
	}
}

// Lease is this process's hold on the lane's ownership, or its seeking of
// it: FirstLease's answer, which RunLease goes on with.
type Lease struct {
	l       *Owner
	kv      natsjs.KeyValue
	id      string
	owner   bool
	rev     uint64    // the key's revision we wrote last
	renewed time.Time // when we last did
	seenRev uint64    // another owner's revision last seen
	seenAt  time.Time // when it was first seen
}

func (ls *Lease) step(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, 2*time.Second)
	defer cancel()
	now := time.Now()
	if ls.owner {
		ls.renew(ctx, now)
		return
	}
	e, err := ls.kv.Get(ctx, leaseKey)
	switch {
	case errors.Is(err, natsjs.ErrKeyNotFound):
		rev, err := ls.kv.Create(ctx, leaseKey, []byte(ls.id))
		if err == nil {
			ls.take(parent, rev, now)
		}
	case err != nil:
		return
	case e.Revision() != ls.seenRev:
		ls.seenRev, ls.seenAt = e.Revision(), now
	case now.Sub(ls.seenAt) >= leaseTakeover:
		rev, err := ls.kv.Update(ctx, leaseKey, []byte(ls.id), ls.seenRev)
		if err == nil {
			ls.l.log.Info("took over the ordered lane from a process that stopped renewing it", "previous_owner", string(e.Value()))
			ls.take(parent, rev, now)
		}
	}
}

// renew writes the owner's key again. An owner that has not renewed for
// leaseLost stops delivering, whatever NATS answers or how long it takes
// to: the renewal waits at most until then, so a blocked request cannot
// keep it delivering into another process's term (which begins no sooner
// than leaseTakeover after its last renewal).
func (ls *Lease) renew(ctx context.Context, now time.Time) {
	lost := ls.renewed.Add(leaseLost)
	var err error
	if now.Before(lost) {
		rctx, cancel := context.WithDeadline(ctx, lost)
		var rev uint64
		rev, err = ls.kv.Update(rctx, leaseKey, []byte(ls.id), ls.rev)
		cancel()
		if err == nil {
			ls.rev, ls.renewed = rev, now
			return
		}
	} else {
		err = fmt.Errorf("not renewed for %s", leaseLost)
	}
	if isWrongRevision(err) || !time.Now().Before(lost) {
		ls.owner = false
		ls.l.end()
		ls.l.log.Warn("stopped delivering the ordered lane: another process took it over, or NATS did not answer", "err", err)
	}
}

func (ls *Lease) take(ctx context.Context, rev uint64, now time.Time) {
	if err := ls.l.begin(ctx); err != nil {
		ls.l.log.Warn("start delivering the ordered lane", "err", err)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = ls.kv.Delete(dctx, leaseKey, natsjs.LastRevision(rev))
		return
	}
	ls.owner, ls.rev, ls.renewed = true, rev, now
	ls.l.log.Debug("delivering the ordered lane", "stream", jetstream.LaneStream)
}

// let ends the term and gives the key up, so another process takes over at
// once.
func (ls *Lease) let(ctx context.Context) {
	if !ls.owner {
		return
	}
	ls.l.end()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := ls.kv.Delete(dctx, leaseKey, natsjs.LastRevision(ls.rev)); err != nil {
		ls.l.log.Debug("give up the ordered lane", "err", err)
	}
}

func isWrongRevision(err error) bool {
	var apiErr *natsjs.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequence
}
