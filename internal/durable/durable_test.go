package durable_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hookjet/hookjet/internal/durable"
	"github.com/hookjet/hookjet/internal/powercut"
)

func TestCreateFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	if err := durable.CreateFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := durable.CreateFile(p, []byte("two"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second CreateFile: %v, want fs.ErrExist", err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "one" {
		t.Fatalf("content %q, %v; want the first", b, err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	des, err := os.ReadDir(dir)
	if err != nil || len(des) != 1 {
		t.Fatalf("directory holds %v (%v), want only the file", des, err)
	}
}

// On a filesystem that forgets what was not synced, a created file
// survives a power cut with its content and mode, and leaves no temporary
// file behind.
func TestCreateFileSurvivesPowerCut(t *testing.T) {
	if err := powercut.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v (CI must run the power-cut tests)", err)
		}
		t.Skip(err)
	}
	base := t.TempDir()
	backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f, err := powercut.Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	// A sub-directory created without syncing: CreateFile's directory
	// sync must carry it.
	if err := os.Mkdir(filepath.Join(mnt, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := durable.SyncDir(mnt); err != nil {
		t.Fatal(err)
	}
	if err := durable.CreateFile(filepath.Join(mnt, "data", "secret.key"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Cut(); err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(filepath.Join(backing, "data"))
	if err != nil || len(des) != 1 || des[0].Name() != "secret.key" {
		t.Fatalf("after the cut data/ holds %v (%v), want only secret.key", des, err)
	}
	b, err := os.ReadFile(filepath.Join(backing, "data", "secret.key"))
	if err != nil || string(b) != "k" {
		t.Fatalf("secret.key = %q, %v", b, err)
	}
}
