package powercut_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hookjet/hookjet/internal/powercut"
)

// mounted is a power-cut filesystem of a test.
type mounted struct {
	t            *testing.T
	fs           *powercut.FS
	mnt, backing string
}

// mount mounts a power-cut filesystem over a new backing directory holding
// the files of initial. Without root or /dev/fuse the test is skipped
// (under CI it fails).
func mount(t *testing.T, initial map[string]string) *mounted {
	t.Helper()
	if err := powercut.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v (CI must run the power-cut tests)", err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	m := &mounted{t: t, backing: filepath.Join(dir, "backing"), mnt: filepath.Join(dir, "mnt")}
	for _, d := range []string{m.backing, m.mnt} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range initial {
		p := filepath.Join(m.backing, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m.remount()
	return m
}

// remount mounts the backing directory again (after a cut).
func (m *mounted) remount() {
	m.t.Helper()
	f, err := powercut.Mount(m.backing, m.mnt)
	if err != nil {
		m.t.Fatal(err)
	}
	m.fs = f
	m.t.Cleanup(func() {
		if m.fs == f {
			if err := f.Unmount(); err != nil {
				m.t.Error(err)
			}
		}
	})
}

// cut cuts the power and mounts again.
func (m *mounted) cut() {
	m.t.Helper()
	f := m.fs
	m.fs = nil
	if err := f.Cut(); err != nil {
		m.t.Fatal(err)
	}
	m.remount()
}

func (m *mounted) path(name string) string { return filepath.Join(m.mnt, name) }

// write writes content to name (created or truncated), optionally syncing
// the file before closing it.
func (m *mounted) write(name, content string, sync bool) {
	m.t.Helper()
	f, err := os.OpenFile(m.path(name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		m.t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		m.t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			m.t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		m.t.Fatal(err)
	}
}

// syncDir fsyncs the directory name ("" for the root).
func (m *mounted) syncDir(name string) {
	m.t.Helper()
	d, err := os.Open(m.path(name))
	if err != nil {
		m.t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		m.t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		m.t.Fatal(err)
	}
}

// expect checks name's content; absent means it must not exist.
func (m *mounted) expect(name, content string, absent bool) {
	m.t.Helper()
	b, err := os.ReadFile(m.path(name))
	switch {
	case absent && errors.Is(err, fs.ErrNotExist):
	case absent:
		m.t.Errorf("%s: exists (%q, %v), want it gone", name, b, err)
	case err != nil:
		m.t.Errorf("%s: %v, want %q", name, err, content)
	case string(b) != content:
		m.t.Errorf("%s = %q, want %q", name, b, content)
	}
}

func TestContentAsOfLastSync(t *testing.T) {
	m := mount(t, map[string]string{"old": "at mount", "dir/kept": "kept"})
	m.write("old", "synced", true)
	m.write("old", "not synced", false)
	m.expect("old", "not synced", false) // before the cut, everything is visible
	m.cut()
	m.expect("old", "synced", false)
	m.expect("dir/kept", "kept", false)
}

func TestUnsyncedFileIsGone(t *testing.T) {
	m := mount(t, nil)
	m.write("new", "never synced", false)
	m.write("synced", "data", true) // a synced new file keeps its name
	m.cut()
	m.expect("new", "", true)
	m.expect("synced", "data", false)
}

func TestSyncedDirectoryKeepsUnsyncedFileEmpty(t *testing.T) {
	m := mount(t, nil)
	m.write("named", "content never synced", false)
	m.syncDir("")
	m.cut()
	m.expect("named", "", false)
}

func TestRenameNeedsDirectorySync(t *testing.T) {
	m := mount(t, map[string]string{"state": "v1"})
	m.write("state.tmp", "v2", true)
	if err := os.Rename(m.path("state.tmp"), m.path("state")); err != nil {
		t.Fatal(err)
	}
	m.expect("state", "v2", false)
	m.cut()
	m.expect("state", "v1", false)
	m.expect("state.tmp", "v2", false)

	m.write("state.tmp", "v3", true)
	if err := os.Rename(m.path("state.tmp"), m.path("state")); err != nil {
		t.Fatal(err)
	}
	m.syncDir("")
	m.cut()
	m.expect("state", "v3", false)
	m.expect("state.tmp", "", true)
}

func TestUnlinkNeedsDirectorySync(t *testing.T) {
	m := mount(t, map[string]string{"a": "A", "b": "B"})
	for _, n := range []string{"a", "b"} {
		if err := os.Remove(m.path(n)); err != nil {
			t.Fatal(err)
		}
	}
	m.write("c", "C", true)
	m.cut()
	m.expect("a", "A", false)
	m.expect("b", "B", false)
	if err := os.Remove(m.path("a")); err != nil {
		t.Fatal(err)
	}
	m.syncDir("")
	m.cut()
	m.expect("a", "", true)
	m.expect("b", "B", false)
	m.expect("c", "C", false)
}

func TestOSyncWritesAreDurable(t *testing.T) {
	m := mount(t, nil)
	f, err := os.OpenFile(m.path("log"), os.O_WRONLY|os.O_CREATE|os.O_SYNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("one "); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("two"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	m.cut()
	m.expect("log", "one two", false)
}

func TestTruncateAndAppend(t *testing.T) {
	m := mount(t, map[string]string{"f": "0123456789"})
	if err := os.Truncate(m.path("f"), 4); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(m.path("f"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("ab"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("lost"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	m.cut()
	m.expect("f", "0123ab", false)
}

func TestNewDirectoriesOfASyncedFile(t *testing.T) {
	m := mount(t, nil)
	if err := os.MkdirAll(m.path("a/b"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(m.path("empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	m.write("a/b/f", "deep", true)
	m.cut()
	m.expect("a/b/f", "deep", false)
	if _, err := os.Stat(m.path("empty")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an unsynced new directory survived the cut: %v", err)
	}
}

func TestModeSurvives(t *testing.T) {
	m := mount(t, nil)
	m.write("key", "secret", true)
	if err := os.Chmod(m.path("key"), 0o640); err != nil {
		t.Fatal(err)
	}
	m.syncDir("")
	m.cut()
	st, err := os.Stat(m.path("key"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", st.Mode().Perm())
	}
}

func TestUnmountKeepsEverything(t *testing.T) {
	m := mount(t, nil)
	m.write("f", "not synced", false)
	if err := m.fs.Unmount(); err != nil {
		t.Fatal(err)
	}
	m.fs = nil
	b, err := os.ReadFile(filepath.Join(m.backing, "f"))
	if err != nil || string(b) != "not synced" {
		t.Errorf("backing f = %q, %v; want the unsynced write kept", b, err)
	}
}
