package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// sharedSeen answers "was this event id already accepted as another stream
// message?" for every hookjet process on a deployment: the first process to
// see an id records its stream sequence in the KV bucket HOOKJET_SEEN (TTL
// dedupe.ttl) with a create that only one writer can win. A bounded local
// cache keeps it to one KV operation per event and process, not per endpoint.
//
// It is used when hookjet runs against an external NATS deployment (nats.url),
// where several processes may share the work; the embedded server has one
// process and the local ledger answers alone.
type sharedSeen struct {
	kv natsjs.KeyValue

	mu    sync.Mutex
	cache map[string]uint64
	order []string // ring of cached ids, oldest evicted first
	next  int
}

const seenCacheSize = 1 << 16

// seenTimeout bounds one shared dedupe lookup.
const seenTimeout = time.Second

func newSharedSeen(kv natsjs.KeyValue) *sharedSeen {
	return &sharedSeen{kv: kv, cache: make(map[string]uint64, seenCacheSize), order: make([]string, seenCacheSize)}
}

// seenKey maps any event id onto the KV key alphabet.
func seenKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (s *sharedSeen) remember(id string, seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cache[id]; ok {
		return
	}
	if old := s.order[s.next]; old != "" {
		delete(s.cache, old)
	}
	s.order[s.next] = id
	s.next = (s.next + 1) % len(s.order)
	s.cache[id] = seq
}

// duplicate reports whether id was first recorded under another sequence.
func (s *sharedSeen) duplicate(ctx context.Context, id string, seq uint64) (bool, error) {
	s.mu.Lock()
	first, ok := s.cache[id]
	s.mu.Unlock()
	if ok {
		return first != seq, nil
	}
	// A slow lookup holds one fan-out worker, never the consumer; past
	// seenTimeout the event is delivered (a possible duplicate beats a
	// stall).
	ctx, cancel := context.WithTimeout(ctx, seenTimeout)
	defer cancel()
	key := seenKey(id)
	_, err := s.kv.Create(ctx, key, strconv.AppendUint(nil, seq, 10))
	if err == nil {
		s.remember(id, seq)
		return false, nil
	}
	if !errors.Is(err, natsjs.ErrKeyExists) {
		return false, fmt.Errorf("record event id: %w", err)
	}
	e, err := s.kv.Get(ctx, key)
	if err != nil {
		return false, fmt.Errorf("read event id: %w", err)
	}
	first, err = strconv.ParseUint(string(e.Value()), 10, 64)
	if err != nil {
		return false, fmt.Errorf("read event id: %w", err)
	}
	s.remember(id, first)
	return first != seq, nil
}
