package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hookjet/hookjet/dispatch/epstate"
	"github.com/hookjet/hookjet/dispatch/settle"
	"github.com/hookjet/hookjet/jetstream"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Options are what Run needs; every field is required except Log and Now.
type Options struct {
	JS natsjs.JetStream
	// Ledger says which endpoints had an event (dedupe.Ledger): those get
	// no task.
	Ledger interface {
		Delivered(endpoint, eventID string) (bool, error)
	}
	// States changes an endpoint's shared state (package epstate).
	States interface {
		Update(ctx context.Context, id string, fn func(*epstate.State) bool) error
	}
	// Publish stores a task and waits for its PubAck (settle.Stage).
	Publish func(msg *nats.Msg) error
	// Wake tells the drains that endpoint has tasks now.
	Wake func(endpoint string)
	// AckWait is the fan-out consumer's, should it have to be made here.
	AckWait time.Duration
	Log     *slog.Logger
	Now     func() time.Time // nil: time.Now
}

// upgrader is one Run's options.
type upgrader struct{ Options }

// Run upgrades a deployment of the first design, which had one durable
// consumer "ep-<id>" per endpoint on an interest-retention HOOKJET_EVENTS,
// replays in HOOKJET_REPLAY and disabled states in HOOKJET_ENDPOINTS. Each
// old consumer's unacked events become tasks of its endpoint (deterministic
// Nats-Msg-Ids, so two processes upgrading at once store each once) before
// the consumer is deleted; the new fan-out consumer then starts after them.
// Nothing is lost: EnsureStreams has already switched the stream to limits
// retention, so deleting a consumer removes no event. A deployment of the
// current design has nothing to upgrade: Run then only looks.
func Run(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	d := &upgrader{o}
	if err := d.states(ctx); err != nil {
		return err
	}
	st, err := d.JS.Stream(ctx, jetstream.EventsStream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", jetstream.EventsStream, err)
	}
	var legacy []string
	names := st.ConsumerNames(ctx)
	for name := range names.Name() {
		if strings.HasPrefix(name, jetstream.LegacyConsumerPrefix) {
			legacy = append(legacy, name)
		}
	}
	if err := names.Err(); err != nil {
		return fmt.Errorf("list consumers: %w", err)
	}
	if len(legacy) > 0 {
		if _, err := d.JS.Consumer(ctx, jetstream.EventsStream, jetstream.FanoutConsumer); errors.Is(err, natsjs.ErrConsumerNotFound) {
			last := st.CachedInfo().State.LastSeq
			if _, err := jetstream.EnsureFanoutConsumerFrom(ctx, d.JS, d.AckWait, last+1); err != nil {
				return err
			}
		}
	}
	for _, name := range legacy {
		n, err := d.consumer(ctx, st, name)
		if err != nil {
			return fmt.Errorf("upgrade consumer %s: %w", name, err)
		}
		d.Log.Info("upgraded a per-endpoint consumer of the first design into tasks", "consumer", name, "tasks", n)
	}
	return d.replays(ctx)
}

// consumer turns the events the old consumer name had not had acked into
// tasks of its endpoint, then deletes it.
func (d *upgrader) consumer(ctx context.Context, st natsjs.Stream, name string) (int, error) {
	c, err := st.Consumer(ctx, name)
	if errors.Is(err, natsjs.ErrConsumerNotFound) {
		return 0, nil // another process upgraded it meanwhile
	}
	if err != nil {
		return 0, err
	}
	info := c.CachedInfo()
	endpoint := strings.TrimPrefix(name, jetstream.LegacyConsumerPrefix)
	last := st.CachedInfo().State.LastSeq
	n := 0
	if info.NumPending+uint64(info.NumAckPending) > 0 && info.AckFloor.Stream < last {
		filters := info.Config.FilterSubjects
		if info.Config.FilterSubject != "" {
			filters = append(filters, info.Config.FilterSubject)
		}
		oc, err := d.JS.OrderedConsumer(ctx, jetstream.EventsStream, natsjs.OrderedConsumerConfig{
			FilterSubjects: filters,
			DeliverPolicy:  natsjs.DeliverByStartSequencePolicy,
			OptStartSeq:    info.AckFloor.Stream + 1,
		})
		if err != nil {
			return 0, err
		}
		for {
			msg, err := oc.Next(natsjs.FetchMaxWait(2 * time.Second))
			if err != nil {
				// The consumer is deleted only once everything it held is
				// a task: a slow answer fails the upgrade, which the next
				// start repeats.
				return n, fmt.Errorf("read its events: %w", err)
			}
			meta, err := msg.Metadata()
			if err != nil {
				continue
			}
			ev, _ := settle.EventOf(msg, meta)
			if ok, _ := d.Ledger.Delivered(endpoint, ev.ID); !ok {
				if err := d.Publish(settle.TaskMsg(endpoint, &ev, settle.State{}, msg.Data(), msg.Headers(), time.Time{})); err != nil {
					return n, err
				}
				n++
			}
			if meta.Sequence.Stream >= last || meta.NumPending == 0 {
				break
			}
		}
	}
	if err := st.DeleteConsumer(ctx, name); err != nil && !errors.Is(err, natsjs.ErrConsumerNotFound) {
		return n, err
	}
	if n > 0 {
		d.Wake(endpoint)
	}
	return n, nil
}

// replays moves replays still waiting in the first design's
// HOOKJET_REPLAY into tasks, then deletes that stream.
func (d *upgrader) replays(ctx context.Context) error {
	st, err := d.JS.Stream(ctx, jetstream.LegacyReplayStream)
	if errors.Is(err, natsjs.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream %s: %w", jetstream.LegacyReplayStream, err)
	}
	last := st.CachedInfo().State.LastSeq
	if st.CachedInfo().State.Msgs > 0 {
		oc, err := d.JS.OrderedConsumer(ctx, jetstream.LegacyReplayStream, natsjs.OrderedConsumerConfig{})
		if err != nil {
			return err
		}
		for {
			msg, err := oc.Next(natsjs.FetchMaxWait(2 * time.Second))
			if err != nil {
				return fmt.Errorf("read %s: %w", jetstream.LegacyReplayStream, err)
			}
			meta, _ := msg.Metadata()
			endpoint := strings.TrimPrefix(msg.Subject(), "hookjet.replay.")
			h := msg.Headers()
			ev := settle.Event{ID: h.Get(jetstream.HdrEventID), Type: h.Get(jetstream.HdrEventType), Key: "r" + h.Get(jetstream.HdrReplayOf), At: d.Now()}
			if err := d.Publish(settle.TaskMsg(endpoint, &ev, settle.State{}, msg.Data(), h, time.Time{})); err != nil {
				return err
			}
			if meta == nil || meta.Sequence.Stream >= last || meta.NumPending == 0 {
				break
			}
		}
	}
	if err := d.JS.DeleteStream(ctx, jetstream.LegacyReplayStream); err != nil && !errors.Is(err, natsjs.ErrStreamNotFound) {
		return err
	}
	d.Log.Info("upgraded the first design's replay stream into tasks", "stream", jetstream.LegacyReplayStream)
	return nil
}

// states moves disabled states of the first design (values
// {"reason","at"} in HOOKJET_ENDPOINTS) into HOOKJET_ENDPOINT_STATE.
func (d *upgrader) states(ctx context.Context) error {
	kv, err := d.JS.KeyValue(ctx, jetstream.EndpointBucket)
	if errors.Is(err, natsjs.ErrBucketNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bucket %s: %w", jetstream.EndpointBucket, err)
	}
	// One pass over the bucket (not a Get per key): it runs at every start,
	// with as many API endpoints as there are.
	w, err := kv.WatchAll(ctx, natsjs.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("bucket %s: %w", jetstream.EndpointBucket, err)
	}
	defer func() { _ = w.Stop() }()
	for e := range w.Updates() {
		if e == nil {
			break // the current values have all been seen
		}
		key := e.Key()
		var old struct {
			URL    string    `json:"url"`
			Reason *string   `json:"reason"`
			At     time.Time `json:"at"`
		}
		if json.Unmarshal(e.Value(), &old) != nil || old.URL != "" || old.Reason == nil {
			continue // an endpoint definition
		}
		err = d.States.Update(ctx, key, func(s *epstate.State) bool {
			s.Disabled, s.Reason, s.At = true, *old.Reason, old.At
			return true
		})
		if err != nil {
			return err
		}
		if err := kv.Delete(ctx, key, natsjs.LastRevision(e.Revision())); err != nil {
			d.Log.Debug("remove legacy state", "endpoint", key, "err", err)
		}
	}
	return nil
}
