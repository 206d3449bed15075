package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookjet/hookjet/jetstream"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// maxDeliveries is the part of a MAX_DELIVERIES advisory hookjet reads.
type maxDeliveries struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// runSafetyNet moves messages that hit JetStream's MaxDeliver to the DLQ. It
// should rarely have work: hookjet dead-letters at retry.max_attempts, far
// below MaxDeliver; only a long run of deferrals or crashes gets there.
func (d *Dispatcher) runSafetyNet(ctx context.Context) error {
	cons, err := d.o.JS.CreateOrUpdateConsumer(ctx, jetstream.AdvisoryStream, natsjs.ConsumerConfig{
		Durable:     jetstream.AdvisoryConsumer,
		Description: "hookjet moves messages that hit MaxDeliver to HOOKJET_DLQ",
		AckPolicy:   natsjs.AckExplicitPolicy,
		AckWait:     time.Minute,
	})
	if err != nil {
		return fmt.Errorf("consumer %s: %w", jetstream.AdvisoryConsumer, err)
	}
	cc, err := cons.Consume(func(m natsjs.Msg) {
		if err := d.moveExhausted(m.Data()); err != nil {
			d.log.Warn("MaxDeliver safety net", "err", err)
			if err := m.NakWithDelay(5 * time.Second); err != nil {
				d.log.Debug("nak advisory", "err", err)
			}
			return
		}
		if err := m.Ack(); err != nil {
			d.log.Debug("ack advisory", "err", err)
		}
	}, natsjs.PullMaxMessages(8))
	if err != nil {
		return fmt.Errorf("consume %s: %w", jetstream.AdvisoryStream, err)
	}
	d.life.background.Add(1)
	go func() {
		defer d.life.background.Done()
		<-d.life.loopCtx.Done()
		cc.Stop()
	}()
	return nil
}

// errSourceGone reports an advisory whose message is no longer stored.
var errSourceGone = errors.New("the message the advisory names is no longer stored")

// moveExhausted dead-letters the message a MAX_DELIVERIES advisory names: an
// event (for each matching endpoint that has not had it) or a task. The
// handlers dead-letter one delivery before MaxDeliver, so this runs only
// after crashes; an original that is gone is an error, counted and logged,
// never taken for success.
func (d *Dispatcher) moveExhausted(data []byte) error {
	var adv maxDeliveries
	if err := json.Unmarshal(data, &adv); err != nil {
		return nil // not ours to fix; drop it
	}
	ctx, cancel := context.WithTimeout(d.life.loopCtx, 10*time.Second)
	defer cancel()
	var stream string
	switch {
	case adv.Stream == jetstream.EventsStream && adv.Consumer == jetstream.FanoutConsumer:
		stream = jetstream.EventsStream
	case adv.Stream == jetstream.TasksStream && strings.HasPrefix(adv.Consumer, jetstream.DrainPrefix):
		stream = jetstream.TasksStream
	default:
		return nil
	}
	st, err := d.o.JS.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	raw, err := st.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		d.o.Metrics.SafetyNetErrors.Inc()
		d.log.Error("MaxDeliver safety net: message already gone", "stream", stream, "seq", adv.StreamSeq, "err", errSourceGone)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get message %d: %w", adv.StreamSeq, err)
	}
	why := fmt.Sprintf("JetStream MaxDeliver reached after %d deliveries", adv.Deliveries)
	var dls []*delivery
	if stream == jetstream.TasksStream {
		id := strings.TrimPrefix(raw.Subject, jetstream.TasksPrefix)
		ev, ast := taskOf(raw.Header, raw.Time)
		if ast.Error == "" {
			ast.Error = why
		}
		dls = append(dls, &delivery{e: &endpoint{id: id}, ev: &ev, st: ast, data: raw.Data, hdr: raw.Header})
	} else {
		ev := event{seq: adv.StreamSeq, key: fmt.Sprint(adv.StreamSeq), at: raw.Time, typ: strings.TrimPrefix(raw.Subject, jetstream.EventsPrefix), id: raw.Header.Get(jetstream.HdrMsgID)}
		if ev.id == "" {
			ev.id = "seq_" + ev.key
		}
		ev.tenant, ev.badTenant = eventTenant(raw.Header)
		for _, id := range d.table.Match(ev.tenant, ev.typ, nil) { // a bad tenant matches "": the operator's endpoints
			if done, _ := d.o.Ledger.Delivered(id, ev.id); done {
				continue
			}
			dls = append(dls, &delivery{e: &endpoint{id: id}, ev: &ev, st: attemptState{Error: why}, data: raw.Data, hdr: raw.Header})
		}
	}
	failed := 0
	for _, dl := range dls {
		dl.done = func(ok bool) {
			if !ok {
				failed++
			}
		}
		d.settle.deadLetter(dl, "exhausted")
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d dead letters not stored", failed, len(dls))
	}
	if stream == jetstream.TasksStream {
		if err := st.DeleteMsg(ctx, adv.StreamSeq); err != nil && !errors.Is(err, natsjs.ErrMsgNotFound) {
			return fmt.Errorf("remove exhausted task %d: %w", adv.StreamSeq, err)
		}
	}
	d.log.Warn("dead-lettered by the MaxDeliver safety net", "stream", stream, "seq", adv.StreamSeq, "deliveries", adv.Deliveries, "endpoints", len(dls))
	return nil
}
