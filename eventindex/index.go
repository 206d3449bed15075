package eventindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// GenShift sets the size of a generation: GenSize sequences. The live
// generation's summaries are the index's only memory per event, so it is
// kept small.
const (
	GenShift = 15
	GenSize  = 1 << GenShift
)

var (
	metaBucket = []byte("meta")
	keySealed  = []byte("sealed")
	keyStream  = []byte("stream")
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
	db *bolt.DB

	mu      sync.RWMutex
	mem     []*memGen // in memory, oldest first: the one being sealed, if any, and the live one
	sealed  uint64    // every sequence up to this one is in the db
	applied uint64    // the last sequence added
	wake    chan struct{}

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
	opts := &bolt.Options{Timeout: 2 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType}
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil && !errors.Is(err, bolterrors.ErrTimeout) {
		if rerr := os.Remove(path); rerr == nil {
			db, err = bolt.Open(path, 0o600, opts)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("event index %s: %w", path, err)
	}
	x := &Index{db: db}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		if v := b.Get(keySealed); len(v) == 8 {
			x.sealed = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("event index %s: %w", path, err)
	}
	x.applied = x.sealed
	x.mem = []*memGen{{num: genOf(x.sealed + 1)}}
	return x, nil
}

// Close waits for a generation being written and closes the file.
func (x *Index) Close() error {
	_ = x.waitSeal()
	return x.db.Close()
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

func genOf(seq uint64) uint64 { return (seq - 1) >> GenShift }

// genStart and genEnd are the first and last sequences of generation g.
func genStart(g uint64) uint64 { return g<<GenShift + 1 }
func genEnd(g uint64) uint64   { return (g + 1) << GenShift }

// Sealed is the last sequence kept in the file: a follower resumes after it.
func (x *Index) Sealed() uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.sealed
}

// Applied is the last sequence added.
func (x *Index) Applied() uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.applied
}

// Stream is the identity of the stream the index was built from ("" for a
// new index).
func (x *Index) Stream() string {
	var s string
	_ = x.db.View(func(tx *bolt.Tx) error {
		s = string(tx.Bucket(metaBucket).Get(keyStream))
		return nil
	})
	return s
}

// Reset empties the index and names the stream it indexes from now on.
func (x *Index) Reset(stream string) error {
	_ = x.waitSeal() // emptied below either way
	x.mu.Lock()
	defer x.mu.Unlock()
	err := x.db.Update(func(tx *bolt.Tx) error {
		var names [][]byte
		err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			if !bytes.Equal(name, metaBucket) {
				names = append(names, slices.Clone(name))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := tx.DeleteBucket(n); err != nil {
				return err
			}
		}
		b := tx.Bucket(metaBucket)
		if err := b.Put(keySealed, binary.BigEndian.AppendUint64(nil, 0)); err != nil {
			return err
		}
		return b.Put(keyStream, []byte(stream))
	})
	if err != nil {
		return fmt.Errorf("reset event index: %w", err)
	}
	x.sealed, x.applied = 0, 0
	x.mem = []*memGen{{num: 0}}
	x.notify()
	return nil
}

// Skip moves the index past sequences that no longer exist (the stream's
// first sequence is first): generations before first's are left empty.
func (x *Index) Skip(first uint64) error {
	if first <= 1 {
		return nil
	}
	x.mu.Lock()
	if first-1 <= x.applied {
		x.mu.Unlock()
		return nil
	}
	live := x.mem[len(x.mem)-1]
	x.mu.Unlock()
	if g := genOf(first); g > live.num {
		if err := x.waitSeal(); err != nil {
			return err
		}
		x.startSeal(live, g)
		if err := x.waitSeal(); err != nil {
			return err
		}
		if err := x.setSealed(g << GenShift); err != nil {
			return err
		}
	}
	x.mu.Lock()
	x.applied = max(x.applied, first-1)
	x.notify()
	x.mu.Unlock()
	return nil
}

// Add indexes e (sequences arrive in increasing order). An entry with an
// empty Type (a message that could not be read) only advances Applied.
func (x *Index) Add(e Entry) error {
	x.mu.Lock()
	if e.Seq <= x.applied {
		x.mu.Unlock()
		return nil
	}
	live := x.mem[len(x.mem)-1]
	if g := genOf(e.Seq); g != live.num {
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
	x.applied = e.Seq
	x.notify()
	x.mu.Unlock()
	return nil
}

// notify wakes the waiters of Wait; x.mu is held.
func (x *Index) notify() {
	if x.wake != nil {
		close(x.wake)
		x.wake = nil
	}
}

// Wait returns once Applied reaches seq, or ctx ends (reported as false).
func (x *Index) Wait(ctx context.Context, seq uint64) bool {
	for {
		x.mu.Lock()
		if x.applied >= seq {
			x.mu.Unlock()
			return true
		}
		if x.wake == nil {
			x.wake = make(chan struct{})
		}
		w := x.wake
		x.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return false
		}
	}
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
	end := genEnd(old.num)
	err := x.db.Update(func(tx *bolt.Tx) error {
		if len(keys) > 0 {
			b, err := tx.CreateBucketIfNotExists(genName(old.num))
			if err != nil {
				return err
			}
			b.FillPercent = 1.0 // appended in order: full pages
			for i, k := range keys {
				if err := b.Put(k, vals[i]); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(metaBucket).Put(keySealed, binary.BigEndian.AppendUint64(nil, end))
	})
	if err != nil {
		// Queries keep reading it from memory; after a restart the
		// follower reads it again from the stream.
		return fmt.Errorf("seal event index generation %d: %w", old.num, err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sealed = max(x.sealed, end)
	x.mem = slices.DeleteFunc(x.mem, func(g *memGen) bool { return g == old })
	return nil
}

// setSealed records sealed.
func (x *Index) setSealed(seq uint64) error {
	err := x.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(metaBucket).Put(keySealed, binary.BigEndian.AppendUint64(nil, seq))
	})
	if err != nil {
		return fmt.Errorf("event index: %w", err)
	}
	x.mu.Lock()
	x.sealed = max(x.sealed, seq)
	x.mu.Unlock()
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

func genName(g uint64) []byte { return binary.BigEndian.AppendUint64([]byte{'g'}, g) }

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
	err := x.db.Update(func(tx *bolt.Tx) error {
		var old [][]byte
		c := tx.Cursor()
		for k, _ := c.Seek([]byte{'g'}); k != nil && k[0] == 'g' && len(k) == 9; k, _ = c.Next() {
			if genEnd(binary.BigEndian.Uint64(k[1:])) >= first {
				break
			}
			old = append(old, slices.Clone(k))
		}
		for _, k := range old {
			if err := tx.DeleteBucket(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("prune event index: %w", err)
	}
	return nil
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
	_ = x.db.View(func(tx *bolt.Tx) error {
		return eachGen(tx, false, func(uint64, *bolt.Bucket) bool { s.Generations++; return true })
	})
	return s
}
