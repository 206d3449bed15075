package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
)

// DefaultSyncInterval is JetStream's own sync interval, assumed for a
// server whose policy cannot be read.
const DefaultSyncInterval = 2 * time.Minute

// SyncUnknown is Durability.Sync when the servers' policy could not be read.
const SyncUnknown = "unknown"

// jszSubject asks every server for its JetStream information, the config
// with its sync policy included. Only the system account may ask.
const jszSubject = "$SYS.REQ.SERVER.PING.JSZ"

// Durability is what hookjet knows of how its streams are stored
// ([api.Durability], as /readyz reports it), with what the process decides
// from it.
type Durability api.Durability

// StreamDurability is one stream's share of [Durability].
type StreamDurability = api.StreamDurability

// Lazy reports whether the sync policy acknowledges before fsync, and the
// interval that bounds it (JetStream's default when unknown).
func (d Durability) Lazy() (time.Duration, bool) {
	switch d.Sync {
	case config.SyncAlways:
		return 0, false
	case SyncUnknown:
		return DefaultSyncInterval, true
	}
	if iv, err := time.ParseDuration(d.Sync); err == nil && iv > 0 {
		return iv, true
	}
	return DefaultSyncInterval, true
}

// EventsHold is how long the outbox relay keeps a row after its PubAck:
// the lazy interval when HOOKJET_EVENTS (and HOOKJET_DLQ, where rejected
// rows go) has one replica on a lazily syncing server, else 0 (replicas
// confirm the write, or the server syncs before acknowledging).
func (d Durability) EventsHold() time.Duration {
	iv, lazy := d.Lazy()
	for _, s := range d.Streams {
		if (s.Name == EventsStream || s.Name == DLQStream) && (s.PersistMode == "async" || (lazy && s.Replicas <= 1)) {
			return iv
		}
	}
	return 0
}

// EmbeddedDurability is the sync policy of the embedded server cfg starts.
func EmbeddedDurability(cfg config.NATS) Durability {
	if d, lazy := cfg.SyncInterval(); lazy {
		return Durability{Sync: d.String()}
	}
	return Durability{Sync: config.SyncAlways}
}

// ReadSyncPolicy asks the servers for their JetStream sync policy, which
// only the system account may read; from any other account it returns
// "unknown" and why. With several servers the first answer counts.
func ReadSyncPolicy(ctx context.Context, nc *nats.Conn) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(rctx, jszSubject, nil)
	if err != nil {
		return SyncUnknown, fmt.Errorf("%s: %w (only the system account may read the servers' sync policy)", jszSubject, err)
	}
	var resp struct {
		Data struct {
			Config struct {
				SyncInterval time.Duration `json:"sync_interval"`
				SyncAlways   bool          `json:"sync_always"`
			} `json:"config"`
		} `json:"data"`
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return SyncUnknown, fmt.Errorf("%s: %w", jszSubject, err)
	}
	if resp.Error != nil {
		return SyncUnknown, fmt.Errorf("%s: %s", jszSubject, resp.Error.Description)
	}
	c := resp.Data.Config
	switch {
	case c.SyncAlways:
		return config.SyncAlways, nil
	case c.SyncInterval > 0:
		return c.SyncInterval.String(), nil
	}
	return DefaultSyncInterval.String(), nil
}

// SyncMetadata is the key of HOOKJET_EVENTS's metadata under which a
// `hookjet serve` with the embedded server records its nats.sync, and an
// operator may record the sync policy of servers hookjet cannot ask
// (`nats stream edit HOOKJET_EVENTS --metadata hookjet.sync=always`).
const SyncMetadata = "hookjet.sync"

// RecordSyncPolicy records sync in HOOKJET_EVENTS's metadata, for the
// outbox relays and other processes that reach the embedded server over
// nats.url and cannot ask it.
func RecordSyncPolicy(ctx context.Context, js natsjs.JetStream, sync string) error {
	st, err := js.Stream(ctx, EventsStream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", EventsStream, err)
	}
	sc := st.CachedInfo().Config
	if sc.Metadata[SyncMetadata] == sync {
		return nil
	}
	sc.Metadata = maps.Clone(sc.Metadata)
	if sc.Metadata == nil {
		sc.Metadata = map[string]string{}
	}
	sc.Metadata[SyncMetadata] = sync
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		return fmt.Errorf("record the sync policy in %s: %w", EventsStream, err)
	}
	return nil
}

// ReadStreams fills d.Streams with hookjet's streams and buckets (names
// starting HOOKJET_ or KV_HOOKJET_) and d.AtRisk with those a power cut of
// one server can take acknowledged messages from. An unknown d.Sync takes
// the policy recorded in HOOKJET_EVENTS's metadata ([SyncMetadata]), if
// any.
func ReadStreams(ctx context.Context, js natsjs.JetStream, d *Durability) error {
	d.Streams, d.AtRisk = nil, nil
	l := js.ListStreams(ctx)
	for info := range l.Info() {
		name := info.Config.Name
		if !strings.HasPrefix(name, "HOOKJET_") && !strings.HasPrefix(name, "KV_HOOKJET_") {
			continue
		}
		if rec := info.Config.Metadata[SyncMetadata]; name == EventsStream && d.Sync == SyncUnknown && validSync(rec) {
			d.Sync = rec
		}
		s := StreamDurability{Name: name, Replicas: max(info.Config.Replicas, 1)}
		if asyncPersist(info) {
			s.PersistMode = "async"
		}
		d.Streams = append(d.Streams, s)
	}
	if err := l.Err(); err != nil && !errors.Is(err, natsjs.ErrEndOfData) {
		return fmt.Errorf("list streams: %w", err)
	}
	_, lazy := d.Lazy()
	for _, s := range d.Streams {
		// A stream with persist_mode async (such as a record kept
		// for reading, not delivery state) is lazy by choice: listed in
		// Streams, not at risk.
		if lazy && s.Replicas <= 1 && s.PersistMode == "" {
			d.AtRisk = append(d.AtRisk, s.Name)
		}
	}
	slices.SortFunc(d.Streams, func(a, b StreamDurability) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(d.AtRisk)
	return nil
}

// validSync reports whether s spells a sync policy: "always" or a
// positive duration.
func validSync(s string) bool {
	_, ok := (config.NATS{Sync: s}).SyncInterval()
	return s == config.SyncAlways || ok
}

func asyncPersist(info *natsjs.StreamInfo) bool {
	return info.Config.PersistMode == natsjs.AsyncPersistMode
}
