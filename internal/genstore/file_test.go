package genstore

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func open(t *testing.T, path string) *File {
	t.Helper()
	f, err := Open(path, "test index", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Check(); err != nil {
			t.Errorf("file check: %v", err)
		}
		_ = f.Close()
	})
	return f
}

func gens(t *testing.T, f *File, reverse bool) []uint64 {
	t.Helper()
	var out []uint64
	err := f.EachGen(reverse, func(g uint64, b *bolt.Bucket) bool {
		if b.Get([]byte{'k', byte(g)}) == nil {
			t.Errorf("generation %d lost its key", g)
		}
		out = append(out, g)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSealPruneResetReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	f, err := Open(path, "test index", 4)
	if err != nil {
		t.Fatal(err)
	}
	if f.Gen(16) != 0 || f.Gen(17) != 1 || f.Start(1) != 17 || f.End(1) != 32 {
		t.Fatalf("generation of 16, 17: %d, %d; generation 1: %d..%d", f.Gen(16), f.Gen(17), f.Start(1), f.End(1))
	}
	for _, g := range []uint64{0, 1, 2} {
		if err := f.Seal(g, [][]byte{{'k', byte(g)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Seal(3, nil, nil); err != nil { // an empty generation: no bucket
		t.Fatal(err)
	}
	if got := gens(t, f, true); !slices.Equal(got, []uint64{2, 1, 0}) || f.Sealed() != 64 {
		t.Fatalf("newest first %v, sealed %d; want [2 1 0], 64", got, f.Sealed())
	}
	if err := f.Prune(33); err != nil { // generations 0 and 1 end below 33
		t.Fatal(err)
	}
	if got := gens(t, f, false); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("after Prune(33): %v, want [2]", got)
	}
	if err := f.Reset("stream-1"); err != nil {
		t.Fatal(err)
	}
	if got := gens(t, f, false); len(got) != 0 || f.Sealed() != 0 || f.Stream() != "stream-1" {
		t.Fatalf("after Reset: %v, sealed %d, stream %q", got, f.Sealed(), f.Stream())
	}
	if err := f.SetSealed(48); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(); err != nil {
		t.Errorf("file check: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g := open(t, path)
	if g.Sealed() != 48 || g.Applied() != 48 || g.Stream() != "stream-1" {
		t.Fatalf("reopened: sealed %d, applied %d, stream %q; want 48, 48, stream-1", g.Sealed(), g.Applied(), g.Stream())
	}
}

func TestWait(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "index.db"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if f.Wait(ctx, 1) {
		t.Fatal("Wait(1) returned true before 1 was applied")
	}
	done := make(chan bool)
	go func() { done <- f.Wait(context.Background(), 2) }()
	f.Apply(2)
	if !<-done {
		t.Fatal("Wait(2) returned false after 2 was applied")
	}
	f.Apply(1) // never goes back
	if f.Applied() != 2 {
		t.Fatalf("applied %d after Apply(1), want 2", f.Applied())
	}
}

func TestBefore(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "index.db"))
	err := f.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("x"))
		for _, k := range []string{"a", "c"} {
			if err == nil {
				err = b.Put([]byte(k), []byte(k))
			}
		}
		if err != nil {
			return err
		}
		for _, tt := range []struct{ key, want string }{{"a", ""}, {"b", "a"}, {"c", "a"}, {"d", "c"}} {
			if k, _ := Before(b.Cursor(), []byte(tt.key)); string(k) != tt.want {
				t.Errorf("Before(%q) = %q, want %q", tt.key, k, tt.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
