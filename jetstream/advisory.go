package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

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
	cons, err := d.o.JS.CreateOrUpdateConsumer(ctx, AdvisoryStream, natsjs.ConsumerConfig{
		Durable:     advisoryConsumer,
		Description: "hookjet moves messages that hit MaxDeliver to HOOKJET_DLQ",
		AckPolicy:   natsjs.AckExplicitPolicy,
		AckWait:     time.Minute,
	})
	if err != nil {
		return fmt.Errorf("consumer %s: %w", advisoryConsumer, err)
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
		return fmt.Errorf("consume %s: %w", AdvisoryStream, err)
	}
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		<-d.loopCtx.Done()
		cc.Stop()
	}()
	return nil
}

func (d *Dispatcher) moveExhausted(data []byte) error {
	var adv maxDeliveries
	if err := json.Unmarshal(data, &adv); err != nil {
		return nil // not ours to fix; drop it
	}
	endpoint, ok := strings.CutPrefix(adv.Consumer, consumerPrefix)
	if !ok || adv.Stream != EventsStream {
		return nil
	}
	ctx, cancel := context.WithTimeout(d.loopCtx, 10*time.Second)
	defer cancel()
	st, err := d.o.JS.Stream(ctx, EventsStream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", EventsStream, err)
	}
	raw, err := st.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return nil // gone already (acked, expired or dead-lettered)
	}
	if err != nil {
		return fmt.Errorf("get message %d: %w", adv.StreamSeq, err)
	}
	key := fmt.Sprint(adv.StreamSeq)
	state, err := d.loadAttempts(ctx, endpoint, key)
	if err != nil {
		return err
	}
	if state.DeadLettered != "" {
		return nil
	}
	ev := event{seq: adv.StreamSeq, key: key, at: raw.Time}
	ev.typ = strings.TrimPrefix(raw.Subject, EventsPrefix)
	ev.id = raw.Header.Get(HdrMsgID)
	if ev.id == "" {
		ev.id = fmt.Sprintf("seq_%d", ev.seq)
	}
	if state.Error == "" {
		state.Error = fmt.Sprintf("JetStream MaxDeliver reached after %d deliveries", adv.Deliveries)
	}
	out := deadLetterMsg(endpoint, ev, state, "exhausted", raw.Data, raw.Header.Get(HdrContentType))
	if _, err := d.o.JS.PublishMsg(ctx, out); err != nil {
		return fmt.Errorf("dead-letter copy: %w", err)
	}
	state.DeadLettered = "exhausted"
	if err := d.saveAttempts(ctx, endpoint, key, state); err != nil {
		d.log.Warn("attempt state not saved", "err", err)
	}
	d.o.Metrics.DeadLetters.WithLabelValues(endpoint, "exhausted").Inc()
	d.log.Warn("dead-lettered by the MaxDeliver safety net", "endpoint", endpoint, "event_id", ev.id, "seq", ev.seq, "deliveries", adv.Deliveries)
	d.ops("dead_letter", map[string]any{"endpoint": endpoint, "event_id": ev.id, "event_type": ev.typ, "reason": "exhausted", "attempts": state.Attempts})
	return nil
}
