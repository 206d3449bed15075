package logindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// GenShift sets the size of a generation: GenSize sequences.
const (
	GenShift = 17
	GenSize  = 1 << GenShift
)

var (
	metaBucket = []byte("meta")
	keySealed  = []byte("sealed")
	keyStream  = []byte("stream")
)

// Index is the delivery log's index: sealed generations in bbolt and the
// live one in memory. Add is called by one goroutine (the follower); the
// queries are safe for concurrent use with it.
type Index struct {
	db *bolt.DB

	mu      sync.RWMutex
	live    generation
	sealed  uint64 // every sequence up to this one is in the db
	applied uint64 // the last sequence added
	wake    chan struct{}
}

// generation is the live generation's maps.
type generation struct {
	num    uint64              // generation number: (seq-1) >> GenShift
	events map[uint64][]uint64 // event hash -> sequences, ascending
	eps    map[string][]uint64 // endpoint -> sequences, ascending
}

func newGeneration(num uint64) generation {
	return generation{num: num, events: map[uint64][]uint64{}, eps: map[string][]uint64{}}
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
		return nil, fmt.Errorf("delivery log index %s: %w", path, err)
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
		return nil, fmt.Errorf("delivery log index %s: %w", path, err)
	}
	x.applied = x.sealed
	x.live = newGeneration(genOf(x.sealed + 1))
	return x, nil
}

// Close closes the file.
func (x *Index) Close() error { return x.db.Close() }

func genOf(seq uint64) uint64 { return (seq - 1) >> GenShift }

// genEnd is the last sequence of generation g.
func genEnd(g uint64) uint64 { return (g + 1) << GenShift }

// EventHash is the index's hash of an event id.
func EventHash(id string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return h.Sum64()
}

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
		return fmt.Errorf("reset delivery log index: %w", err)
	}
	x.sealed, x.applied = 0, 0
	x.live = newGeneration(0)
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
	defer x.mu.Unlock()
	if first-1 <= x.applied {
		return nil
	}
	g := genOf(first)
	if g > x.live.num {
		if err := x.sealLocked(); err != nil {
			return err
		}
		x.live = newGeneration(g)
		if err := x.setSealed(g << GenShift); err != nil {
			return err
		}
	}
	x.applied = first - 1
	x.notify()
	return nil
}

// Add indexes the record at seq (sequences arrive in increasing order) of
// event id to endpoint; either may be empty (a record that could not be
// read), which only advances Applied.
func (x *Index) Add(seq uint64, id, endpoint string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if seq <= x.applied {
		return nil
	}
	if g := genOf(seq); g != x.live.num {
		if err := x.sealLocked(); err != nil {
			return err
		}
		x.live = newGeneration(g)
	}
	if id != "" {
		h := EventHash(id)
		x.live.events[h] = append(x.live.events[h], seq)
	}
	if endpoint != "" {
		x.live.eps[endpoint] = append(x.live.eps[endpoint], seq)
	}
	x.applied = seq
	x.notify()
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

// sealLocked writes the live generation to its bucket, keys sorted, and
// records its end as sealed; x.mu is held.
func (x *Index) sealLocked() error {
	keys := x.live.keys()
	end := genEnd(x.live.num)
	err := x.db.Update(func(tx *bolt.Tx) error {
		if len(keys) > 0 {
			b, err := tx.CreateBucketIfNotExists(genName(x.live.num))
			if err != nil {
				return err
			}
			b.FillPercent = 1.0 // appended in order: full pages
			for _, k := range keys {
				if err := b.Put(k, nil); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(metaBucket).Put(keySealed, binary.BigEndian.AppendUint64(nil, end))
	})
	if err != nil {
		return fmt.Errorf("seal delivery log index generation %d: %w", x.live.num, err)
	}
	x.sealed = end
	return nil
}

// setSealed records sealed; x.mu is held.
func (x *Index) setSealed(seq uint64) error {
	err := x.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(metaBucket).Put(keySealed, binary.BigEndian.AppendUint64(nil, seq))
	})
	if err == nil {
		x.sealed = seq
	}
	return err
}

// keys are the generation's bbolt keys, sorted.
func (g *generation) keys() [][]byte {
	var keys [][]byte
	for h, seqs := range g.events {
		for _, s := range seqs {
			keys = append(keys, eventKey(h, s))
		}
	}
	for ep, seqs := range g.eps {
		for _, s := range seqs {
			keys = append(keys, endpointKey(ep, s))
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

func genName(g uint64) []byte { return binary.BigEndian.AppendUint64([]byte{'g'}, g) }

func eventKey(h, seq uint64) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 17), h)
	k = append([]byte{'e'}, k...)
	return binary.BigEndian.AppendUint64(k, seq)
}

func endpointPrefix(ep string) []byte {
	k := make([]byte, 0, len(ep)+10)
	k = append(k, 'p')
	k = append(k, ep...)
	return append(k, 0)
}

func endpointKey(ep string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(endpointPrefix(ep), seq)
}

// Prune deletes the generations whose every sequence is below first (the
// stream's first sequence): their records are gone.
func (x *Index) Prune(first uint64) error {
	if first <= 1 {
		return nil
	}
	return x.db.Update(func(tx *bolt.Tx) error {
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
}
