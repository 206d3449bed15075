package genstore

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

var (
	metaBucket = []byte("meta")
	keySealed  = []byte("sealed")
	keyStream  = []byte("stream")
)

// File is an index's bbolt file and how far its follower has gone: the
// last sequence sealed into the file and the last one applied. Its methods
// are safe for concurrent use.
type File struct {
	db    *bolt.DB
	name  string // the index's name in errors
	shift uint   // a generation holds 1<<shift sequences

	mu      sync.Mutex
	sealed  uint64 // every sequence up to this one is in the file
	applied uint64 // the last sequence added
	wake    chan struct{}
}

// Open opens (or creates) the file at path, for an index called name
// whose generations hold 1<<shift sequences. A file that bbolt cannot open
// (left damaged by a power cut) is removed and created anew.
func Open(path, name string, shift uint) (*File, error) {
	opts := &bolt.Options{Timeout: 2 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType}
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil && !errors.Is(err, bolterrors.ErrTimeout) {
		if rerr := os.Remove(path); rerr == nil {
			db, err = bolt.Open(path, 0o600, opts)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", name, path, err)
	}
	f := &File{db: db, name: name, shift: shift}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		if v := b.Get(keySealed); len(v) == 8 {
			f.sealed = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%s %s: %w", name, path, err)
	}
	f.applied = f.sealed
	return f, nil
}

// Close closes the file.
func (f *File) Close() error { return f.db.Close() }

// Check returns the first inconsistency bbolt finds in the file.
func (f *File) Check() error {
	return f.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
}

// Gen is the generation of seq; Start and End are generation g's first and
// last sequences.
func (f *File) Gen(seq uint64) uint64 { return (seq - 1) >> f.shift }
func (f *File) Start(g uint64) uint64 { return g<<f.shift + 1 }
func (f *File) End(g uint64) uint64   { return (g + 1) << f.shift }

// Sealed is the last sequence kept in the file: a follower resumes after it.
func (f *File) Sealed() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sealed
}

// Applied is the last sequence added.
func (f *File) Applied() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// Apply records that every sequence up to seq is added, and wakes the
// waiters of Wait.
func (f *File) Apply(seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = max(f.applied, seq)
	f.notify()
}

// notify wakes the waiters of Wait; f.mu is held.
func (f *File) notify() {
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
}

// Wait returns once Applied reaches seq, or ctx ends (reported as false).
func (f *File) Wait(ctx context.Context, seq uint64) bool {
	for {
		f.mu.Lock()
		if f.applied >= seq {
			f.mu.Unlock()
			return true
		}
		if f.wake == nil {
			f.wake = make(chan struct{})
		}
		w := f.wake
		f.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return false
		}
	}
}

// Stream is the identity of the stream the index was built from ("" for a
// new index).
func (f *File) Stream() string {
	var s string
	_ = f.db.View(func(tx *bolt.Tx) error {
		s = string(tx.Bucket(metaBucket).Get(keyStream))
		return nil
	})
	return s
}

// Reset deletes every bucket but meta, names the stream indexed from now
// on, and sets Sealed and Applied to 0.
func (f *File) Reset(stream string) error {
	err := f.db.Update(func(tx *bolt.Tx) error {
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
		return fmt.Errorf("reset %s: %w", f.name, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sealed, f.applied = 0, 0
	f.notify()
	return nil
}

// Seal appends generation g's keys (sorted) and their values (nil: none)
// to the generation's bucket and records its end as sealed, in one
// transaction.
func (f *File) Seal(g uint64, keys, vals [][]byte) error {
	end := f.End(g)
	err := f.db.Update(func(tx *bolt.Tx) error {
		if len(keys) > 0 {
			b, err := tx.CreateBucketIfNotExists(genName(g))
			if err != nil {
				return err
			}
			b.FillPercent = 1.0 // appended in order: full pages
			for i, k := range keys {
				var v []byte
				if vals != nil {
					v = vals[i]
				}
				if err := b.Put(k, v); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(metaBucket).Put(keySealed, binary.BigEndian.AppendUint64(nil, end))
	})
	if err != nil {
		return fmt.Errorf("seal %s generation %d: %w", f.name, g, err)
	}
	f.setSealed(end)
	return nil
}

// SetSealed records seq as sealed (the sequences before it are gone from
// the stream).
func (f *File) SetSealed(seq uint64) error {
	err := f.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(metaBucket).Put(keySealed, binary.BigEndian.AppendUint64(nil, seq))
	})
	if err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	f.setSealed(seq)
	return nil
}

func (f *File) setSealed(seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sealed = max(f.sealed, seq)
}

func genName(g uint64) []byte { return binary.BigEndian.AppendUint64([]byte{'g'}, g) }

// Prune deletes the generations whose every sequence is below first (the
// stream's first sequence): the stream no longer holds them.
func (f *File) Prune(first uint64) error {
	if first <= 1 {
		return nil
	}
	err := f.db.Update(func(tx *bolt.Tx) error {
		var old [][]byte
		c := tx.Cursor()
		for k, _ := c.Seek([]byte{'g'}); k != nil && k[0] == 'g' && len(k) == 9; k, _ = c.Next() {
			if f.End(binary.BigEndian.Uint64(k[1:])) >= first {
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
		return fmt.Errorf("prune %s: %w", f.name, err)
	}
	return nil
}
