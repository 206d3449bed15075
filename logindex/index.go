package logindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"sync"

	"github.com/hookjet/hookjet/internal/genstore"
)

// GenShift sets the size of a generation: GenSize sequences.
const (
	GenShift = 17
	GenSize  = 1 << GenShift
)

// Index is the delivery log's index: sealed generations in bbolt and the
// live one in memory. Add is called by one goroutine (the follower); the
// queries are safe for concurrent use with it.
type Index struct {
	f *genstore.File

	mu   sync.RWMutex
	live generation
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
	f, err := genstore.Open(path, "delivery log index", GenShift)
	if err != nil {
		return nil, err
	}
	return &Index{f: f, live: newGeneration(f.Gen(f.Sealed() + 1))}, nil
}

// Close closes the file.
func (x *Index) Close() error { return x.f.Close() }

// EventHash is the index's hash of an event id.
func EventHash(id string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return h.Sum64()
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
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.f.Reset(stream); err != nil {
		return err
	}
	x.live = newGeneration(0)
	return nil
}

// Skip moves the index past sequences that no longer exist (the stream's
// first sequence is first): generations before first's are left empty.
func (x *Index) Skip(first uint64) error {
	if first <= 1 || first-1 <= x.f.Applied() {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if g := x.f.Gen(first); g > x.live.num {
		if err := x.f.Seal(x.live.num, x.live.keys(), nil); err != nil {
			return err
		}
		x.live = newGeneration(g)
		if err := x.f.SetSealed(g << GenShift); err != nil {
			return err
		}
	}
	x.f.Apply(first - 1)
	return nil
}

// Add indexes the record at seq (sequences arrive in increasing order) of
// event id to endpoint; either may be empty (a record that could not be
// read), which only advances Applied.
func (x *Index) Add(seq uint64, id, endpoint string) error {
	if seq <= x.f.Applied() {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if g := x.f.Gen(seq); g != x.live.num {
		if err := x.f.Seal(x.live.num, x.live.keys(), nil); err != nil {
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
	x.f.Apply(seq)
	return nil
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
func (x *Index) Prune(first uint64) error { return x.f.Prune(first) }
