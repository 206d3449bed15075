package settle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/jetstream"
)

// SafetyNet moves messages that hit JetStream's MaxDeliver to the DLQ, as
// exhausted. It should rarely have work: hookjet dead-letters at
// retry.max_attempts, far below MaxDeliver, and the handlers dead-letter
// one delivery before it; only a long run of deferrals or crashes gets
// there.
type SafetyNet struct {
	JS    natsjs.JetStream
	Stage *Stage
	// Index matches an event to the endpoints in force (routing.Table).
	Index interface {
		Match(tenant, eventType string, dst []string) []string
	}
	// Ledger says which endpoints had an event (dedupe.Ledger).
	Ledger interface {
		Delivered(endpoint, eventID string) (bool, error)
	}
	Errors prometheus.Counter // hookjet_safety_net_errors_total
	Log    *slog.Logger
}

// maxDeliveries is the part of a MAX_DELIVERIES advisory hookjet reads.
type maxDeliveries struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// Start consumes HOOKJET_ADVISORIES until stop ends; background is the
// wait group its goroutine is counted in.
func (n *SafetyNet) Start(ctx, stop context.Context, background *sync.WaitGroup) error {
	cons, err := n.JS.CreateOrUpdateConsumer(ctx, jetstream.AdvisoryStream, natsjs.ConsumerConfig{
		Durable:     jetstream.AdvisoryConsumer,
		Description: "hookjet moves messages that hit MaxDeliver to HOOKJET_DLQ",
		AckPolicy:   natsjs.AckExplicitPolicy,
		AckWait:     time.Minute,
	})
	if err != nil {
		return fmt.Errorf("consumer %s: %w", jetstream.AdvisoryConsumer, err)
	}
	cc, err := cons.Consume(func(m natsjs.Msg) {
		if err := n.moveExhausted(stop, m.Data()); err != nil {
			n.Log.Warn("MaxDeliver safety net", "err", err)
			if err := m.NakWithDelay(5 * time.Second); err != nil {
				n.Log.Debug("nak advisory", "err", err)
			}
			return
		}
		if err := m.Ack(); err != nil {
			n.Log.Debug("ack advisory", "err", err)
		}
	}, natsjs.PullMaxMessages(8))
	if err != nil {
		return fmt.Errorf("consume %s: %w", jetstream.AdvisoryStream, err)
	}
	background.Add(1)
	go func() {
		defer background.Done()
		<-stop.Done()
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
func (n *SafetyNet) moveExhausted(ctx context.Context, data []byte) error {
	var adv maxDeliveries
	if err := json.Unmarshal(data, &adv); err != nil {
		return nil // not ours to fix; drop it
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
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
	st, err := n.JS.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	raw, err := st.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		n.Errors.Inc()
		n.Log.Error("MaxDeliver safety net: message already gone", "stream", stream, "seq", adv.StreamSeq, "err", errSourceGone)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get message %d: %w", adv.StreamSeq, err)
	}
	dls := n.deliveries(stream, &adv, raw)
	failed := 0
	for _, dl := range dls {
		dl.Done = func(ok bool) {
			if !ok {
				failed++
			}
		}
		n.Stage.DeadLetter(dl, "exhausted")
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d dead letters not stored", failed, len(dls))
	}
	if stream == jetstream.TasksStream {
		if err := st.DeleteMsg(ctx, adv.StreamSeq); err != nil && !errors.Is(err, natsjs.ErrMsgNotFound) {
			return fmt.Errorf("remove exhausted task %d: %w", adv.StreamSeq, err)
		}
	}
	n.Log.Warn("dead-lettered by the MaxDeliver safety net", "stream", stream, "seq", adv.StreamSeq, "deliveries", adv.Deliveries, "endpoints", len(dls))
	return nil
}

// deliveries are the deliveries of raw, the message adv names in stream:
// a task's one, or an event's to each endpoint it matches that has not had
// it. They carry no settings (Delivery.Config).
func (n *SafetyNet) deliveries(stream string, adv *maxDeliveries, raw *natsjs.RawStreamMsg) []*Delivery {
	why := fmt.Sprintf("JetStream MaxDeliver reached after %d deliveries", adv.Deliveries)
	if stream == jetstream.TasksStream {
		id := strings.TrimPrefix(raw.Subject, jetstream.TasksPrefix)
		ev, ast := TaskOf(raw.Header, raw.Time)
		if ast.Error == "" {
			ast.Error = why
		}
		return []*Delivery{{Endpoint: &Endpoint{ID: id}, Event: &ev, State: ast, Data: raw.Data, Header: raw.Header}}
	}
	ev := Event{Seq: adv.StreamSeq, Key: fmt.Sprint(adv.StreamSeq), At: raw.Time, Type: strings.TrimPrefix(raw.Subject, jetstream.EventsPrefix), ID: raw.Header.Get(jetstream.HdrMsgID)}
	if ev.ID == "" {
		ev.ID = "seq_" + ev.Key
	}
	ev.Tenant, ev.BadTenant = Tenant(raw.Header)
	var dls []*Delivery
	for _, id := range n.Index.Match(ev.Tenant, ev.Type, nil) { // a bad tenant matches "": the operator's endpoints
		if done, _ := n.Ledger.Delivered(id, ev.ID); done {
			continue
		}
		dls = append(dls, &Delivery{Endpoint: &Endpoint{ID: id}, Event: &ev, State: State{Error: why}, Data: raw.Data, Header: raw.Header})
	}
	return dls
}
