package eventindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookjet/hookjet/internal/genstore"
)

// GenShift sets the size of a generation: GenSize sequences. The live
// generation's summaries are the index's only memory per event, so it is
// kept small.
const (
	GenShift = 15
	GenSize  = 1 << GenShift
)

// Entry is one stored event as the index keeps it.
type Entry struct {
	Seq         uint64
	ID          string
	Type        string
	Tenant      string // "" when the event names none
	Key         string // its ordering key; "" when none
	PublishedAt time.Time
	Size        int
}

// Index is the event log's index: sealed generations in bbolt and the live
// one (and one being sealed) in memory. Add is called by one goroutine (the
// follower); the queries are safe for concurrent use with it.
type Index struct {
	f *genstore.File

	mu  sync.RWMutex
	mem []*memGen // in memory, oldest first: the one being sealed, if any, and the live one

	// sealing is closed when the generation being written in the
	// background is in the file (nil: none is); sealErr is its error.
	// Only the follower's goroutine (Add, Skip, Reset, Close) starts and
	// waits for one.
	sealing chan struct{}
	sealErr error
}

// memGen is a generation held in memory: its summaries in sequence order.
type memGen struct {
	num     uint64
	entries []Entry
}

// Open opens (or creates) the index file at path. A file that bbolt cannot
// open (left damaged by a power cut) is removed and created anew: the index
// is rebuilt from the stream.
func Open(path string) (*Index, error) {
	f, err := genstore.Open(path, "event index", GenShift)
	if err != nil {
		return nil, err
	}
	return &Index{f: f, mem: []*memGen{{num: f.Gen(f.Sealed() + 1)}}}, nil
}

// Close waits for a generation being written and closes the file.
func (x *Index) Close() error {
	_ = x.waitSeal()
	return x.f.Close()
}

// Flush waits until the generation being written in the background, if
// any, is in the file, and returns the error of writing it. Like Add, it
// is called by the follower's goroutine.
func (x *Index) Flush() error { return x.waitSeal() }

// waitSeal waits for the generation being written in the background, if
// any, and returns its error.
func (x *Index) waitSeal() error {
	if x.sealing == nil {
		return nil
	}
	<-x.sealing
	x.sealing = nil
	err := x.sealErr
	x.sealErr = nil
	return err
}

// Sealed is the last sequence kept in the file: a follower resumes after it.
func (x *Index) Sealed() uint64 { return x.f.Sealed() }

// Applied is the last sequence added.
func (x *Index) Applied() uint64 { return x.f.Applied() }

// Stream is the identity of the stream the index was built from ("" for a
// new index).
func (x *Index) Stream() string { return x.f.Stream() }

// Wait returns once Applied reaches seq, or ctx ends (reported as false).
func (x *Index) Wait(ctx context.Context, seq uint64) bool { return x.f.Wait(ctx, seq) }

// Reset empties the index and names the stream it indexes from now on.
func (x *Index) Reset(stream string) error {
	_ = x.waitSeal() // emptied below either way
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.f.Reset(stream); err != nil {
		return err
	}
	x.mem = []*memGen{{num: 0}}
	return nil
}

// Skip moves the index past sequences that no longer exist (the stream's
// first sequence is first): generations before first's are left empty.
func (x *Index) Skip(first uint64) error {
	if first <= 1 {
		return nil
	}
	if first-1 <= x.f.Applied() {
		return nil
	}
	x.mu.RLock()
	live := x.mem[len(x.mem)-1]
	x.mu.RUnlock()
	if g := x.f.Gen(first); g > live.num {
		if err := x.waitSeal(); err != nil {
			return err
		}
		x.startSeal(live, g)
		if err := x.waitSeal(); err != nil {
			return err
		}
		if err := x.f.SetSealed(g << GenShift); err != nil {
			return err
		}
	}
	x.f.Apply(first - 1)
	return nil
}

// Add indexes e (sequences arrive in increasing order). An entry with an
// empty Type (a message that could not be read) only advances Applied.
func (x *Index) Add(e Entry) error {
	if e.Seq <= x.f.Applied() {
		return nil
	}
	x.mu.Lock()
	live := x.mem[len(x.mem)-1]
	if g := x.f.Gen(e.Seq); g != live.num {
		x.mu.Unlock()
		// One generation is written at a time, while the next fills: the
		// follower waits only when a write lasts as long as a generation.
		if err := x.waitSeal(); err != nil {
			return err
		}
		x.startSeal(live, g)
		x.mu.Lock()
		live = x.mem[len(x.mem)-1]
	}
	if e.Type != "" {
		live.entries = append(live.entries, e)
	}
	x.mu.Unlock()
	x.f.Apply(e.Seq)
	return nil
}

// startSeal starts generation next in memory and writes generation old
// to its bucket in the background, keys sorted, while queries go on
// reading it from memory; waitSeal waits for it.
func (x *Index) startSeal(old *memGen, next uint64) {
	x.mu.Lock()
	x.mem = append(x.mem, &memGen{num: next})
	entries := old.entries
	x.mu.Unlock()
	done := make(chan struct{})
	x.sealing = done
	go func() {
		defer close(done)
		x.sealErr = x.write(old, entries)
	}()
}

// write writes generation old's entries to its bucket and records its end
// as sealed; old then leaves the memory.
func (x *Index) write(old *memGen, entries []Entry) error {
	keys, vals := genKeys(entries)
	if err := x.f.Seal(old.num, keys, vals); err != nil {
		// Queries keep reading it from memory; after a restart the
		// follower reads it again from the stream.
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.mem = slices.DeleteFunc(x.mem, func(g *memGen) bool { return g == old })
	return nil
}

// genKeys are a generation's bbolt keys, sorted, and their values (the
// summaries under 's', nil for the rest).
func genKeys(entries []Entry) ([][]byte, [][]byte) {
	type kv struct{ k, v []byte }
	all := make([]kv, 0, 4*len(entries))
	for i := range entries {
		e := &entries[i]
		all = append(all, kv{summaryKey(e.Seq), encode(e)})
		all = append(all, kv{k: indexKey('t', e.Seq, e.Type)})
		all = append(all, kv{k: indexKey('i', e.Seq, e.ID)})
		if e.Tenant != "" {
			all = append(all, kv{k: indexKey('n', e.Seq, e.Tenant)})
			all = append(all, kv{k: indexKey('c', e.Seq, e.Tenant, e.Type)})
		}
	}
	slices.SortFunc(all, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	keys, vals := make([][]byte, len(all)), make([][]byte, len(all))
	for i := range all {
		keys[i], vals[i] = all[i].k, all[i].v
	}
	return keys, vals
}

func summaryKey(seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte{'s'}, seq) }

// indexPrefix is family's key prefix for the values parts.
func indexPrefix(family byte, parts ...string) []byte {
	n := 1
	for _, p := range parts {
		n += len(p) + 1
	}
	k := make([]byte, 0, n+8)
	k = append(k, family)
	for _, p := range parts {
		k = append(k, p...)
		k = append(k, 0)
	}
	return k
}

func indexKey(family byte, seq uint64, parts ...string) []byte {
	return binary.BigEndian.AppendUint64(indexPrefix(family, parts...), seq)
}

// Prune deletes the generations whose every sequence is below first (the
// stream's first sequence), and the summaries held in memory below it:
// those events are gone.
func (x *Index) Prune(first uint64) error {
	if first <= 1 {
		return nil
	}
	x.mu.Lock()
	for _, g := range x.mem {
		i, _ := slices.BinarySearchFunc(g.entries, first, func(e Entry, s uint64) int { return cmpU(e.Seq, s) })
		if i > 0 {
			g.entries = slices.Clone(g.entries[i:]) // a query may still read the old array
		}
	}
	x.mu.Unlock()
	return x.f.Prune(first)
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Stats is what the index holds.
type Stats struct {
	// Generations counts the sealed generations in the file; InMemory the
	// summaries held in memory.
	Generations, InMemory int
}

// Stats returns what the index holds.
func (x *Index) Stats() Stats {
	var s Stats
	x.mu.RLock()
	for _, g := range x.mem {
		s.InMemory += len(g.entries)
	}
	x.mu.RUnlock()
	_ = x.f.EachGen(false, func(uint64, *bolt.Bucket) bool { s.Generations++; return true })
	return s
}
