package powercut

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// kind is what an object of the model is.
type kind int

const (
	kindFile kind = iota
	kindDir
	kindSymlink
)

// op is a change to a file's content not yet synced: a write of data at
// off, or a truncation to size.
type op struct {
	off   int64
	data  []byte
	trunc bool
	size  int64
}

// object is one file, directory or symlink of the model, identified by an
// id of the model's own: an inode number of the backing filesystem may be
// reused by a new file while the old one is still durable.
type object struct {
	kind kind
	mode fs.FileMode
	// synced: the content was synced at least once (files: the shadow copy
	// exists; directories: entries holds their durable entries).
	synced  bool
	pending []op              // files: changes since the last sync
	entries map[string]uint64 // directories: durable name -> id
	target  string            // symlinks
}

// model is the durable state of the filesystem: what a power cut leaves.
// File contents as of their last sync live in shadow, one file per id.
type model struct {
	backing, shadow string

	mu     sync.Mutex
	nextID uint64
	live   map[uint64]uint64 // backing inode number -> id of the object living there now
	objs   map[uint64]*object
	root   uint64
}

// newModel records everything under backing as durable, copying file
// contents into shadow.
func newModel(backing, shadow string) (*model, error) {
	m := &model{backing: backing, shadow: shadow, live: map[uint64]uint64{}, objs: map[uint64]*object{}}
	root, err := m.baseline("")
	if err != nil {
		return nil, err
	}
	m.root = root
	return m, nil
}

// baseline records rel (relative to backing) and what is under it as synced.
func (m *model) baseline(rel string) (uint64, error) {
	p := filepath.Join(m.backing, rel)
	st, err := os.Lstat(p)
	if err != nil {
		return 0, err
	}
	id := m.fresh(inode(st), kindOf(st.Mode()))
	o := m.objs[id]
	o.mode, o.synced = st.Mode().Perm(), true
	switch o.kind {
	case kindSymlink:
		if o.target, err = os.Readlink(p); err != nil {
			return 0, err
		}
	case kindFile:
		if err := copyFile(p, m.shadowPath(id)); err != nil {
			return 0, err
		}
	case kindDir:
		des, err := os.ReadDir(p)
		if err != nil {
			return 0, err
		}
		o.entries = map[string]uint64{}
		for _, de := range des {
			cid, err := m.baseline(filepath.Join(rel, de.Name()))
			if err != nil {
				return 0, err
			}
			o.entries[de.Name()] = cid
		}
	}
	return id, nil
}

// fresh gives the object now living at inode ino a new id.
func (m *model) fresh(ino uint64, k kind) uint64 {
	m.nextID++
	id := m.nextID
	m.live[ino] = id
	m.objs[id] = &object{kind: k, mode: 0o600}
	return id
}

// created is called when a file, directory or symlink was created at
// inode ino: nothing of it is durable yet.
func (m *model) created(ino uint64, k kind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fresh(ino, k)
}

// lookup returns the id of the object at inode ino, recording one never
// seen (created behind the filesystem's back) as not durable.
func (m *model) lookup(ino uint64, k kind) uint64 {
	if id, ok := m.live[ino]; ok {
		return id
	}
	return m.fresh(ino, k)
}

// wrote records a write to the file at inode ino; with sync (a descriptor
// opened O_SYNC or O_DSYNC) the write is durable at once.
func (m *model) wrote(ino uint64, rel string, data []byte, off int64, sync bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.lookup(ino, kindFile)
	o := m.objs[id]
	o.pending = append(o.pending, op{off: off, data: append([]byte(nil), data...)})
	if sync {
		return m.syncFileLocked(id, rel)
	}
	return nil
}

// truncated records a truncation of the file at inode ino to size.
func (m *model) truncated(ino uint64, size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.objs[m.lookup(ino, kindFile)]
	o.pending = append(o.pending, op{trunc: true, size: size})
}

// synced records an fsync of the object at inode ino, found at rel.
func (m *model) synced(ino uint64, rel string, dir bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if dir {
		id := m.root
		if rel != "" {
			id = m.lookup(ino, kindDir)
		}
		return m.syncDirLocked(id, rel)
	}
	return m.syncFileLocked(m.lookup(ino, kindFile), rel)
}

// syncFileLocked applies the file's pending changes to its shadow copy and
// makes its name durable if it has none.
func (m *model) syncFileLocked(id uint64, rel string) error {
	o := m.objs[id]
	f, err := os.OpenFile(m.shadowPath(id), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	for _, c := range o.pending {
		if c.trunc {
			err = f.Truncate(c.size)
		} else {
			_, err = f.WriteAt(c.data, c.off)
		}
		if err != nil {
			break
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	o.pending, o.synced = nil, true
	if st, err := os.Lstat(filepath.Join(m.backing, rel)); err == nil {
		o.mode = st.Mode().Perm()
	}
	return m.linkLocked(id, rel)
}

// syncDirLocked makes the directory's current entries its durable ones.
func (m *model) syncDirLocked(id uint64, rel string) error {
	p := filepath.Join(m.backing, rel)
	des, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	entries := make(map[string]uint64, len(des))
	for _, de := range des {
		cp := filepath.Join(p, de.Name())
		st, err := os.Lstat(cp)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return err
		}
		cid := m.lookup(inode(st), kindOf(st.Mode()))
		c := m.objs[cid]
		c.mode = st.Mode().Perm()
		if c.kind == kindSymlink && c.target == "" {
			if c.target, err = os.Readlink(cp); err != nil {
				return err
			}
		}
		entries[de.Name()] = cid
	}
	o := m.objs[id]
	o.entries, o.synced = entries, true
	if st, err := os.Lstat(p); err == nil {
		o.mode = st.Mode().Perm()
	}
	return m.linkLocked(id, rel)
}

// linkLocked gives the object id the durable name rel if no durable
// directory names it yet, making its parents durable as needed.
func (m *model) linkLocked(id uint64, rel string) error {
	if id == m.root || m.named(id) {
		return nil
	}
	parentRel := filepath.Dir(rel)
	if parentRel == "." {
		parentRel = ""
	}
	st, err := os.Lstat(filepath.Join(m.backing, parentRel))
	if err != nil {
		return err
	}
	pid := m.lookup(inode(st), kindDir)
	parent := m.objs[pid]
	if parent.entries == nil {
		parent.entries = map[string]uint64{}
		parent.synced, parent.mode = true, st.Mode().Perm()
	}
	parent.entries[filepath.Base(rel)] = id
	return m.linkLocked(pid, parentRel)
}

// named reports whether a durable directory has an entry for id.
func (m *model) named(id uint64) bool {
	for _, o := range m.objs {
		for _, cid := range o.entries {
			if cid == id {
				return true
			}
		}
	}
	return false
}

func (m *model) shadowPath(id uint64) string {
	return filepath.Join(m.shadow, strconv.FormatUint(id, 10))
}

// restore rewrites the backing directory to the durable state: the
// backing directory is rebuilt beside it and then takes its place.
func (m *model) restore() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	tmp := m.backing + ".powercut-restore"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := m.build(tmp, m.root); err != nil {
		return fmt.Errorf("powercut: rebuild %s: %w", m.backing, err)
	}
	if err := os.RemoveAll(m.backing); err != nil {
		return err
	}
	return os.Rename(tmp, m.backing)
}

// build writes object id and what durably lies under it at path.
func (m *model) build(path string, id uint64) error {
	o := m.objs[id]
	switch o.kind {
	case kindSymlink:
		return os.Symlink(o.target, path)
	case kindDir:
		if err := os.Mkdir(path, 0o700); err != nil {
			return err
		}
		for name, cid := range o.entries {
			if err := m.build(filepath.Join(path, name), cid); err != nil {
				return err
			}
		}
	default:
		if o.synced {
			if err := copyFile(m.shadowPath(id), path); err != nil {
				return err
			}
		} else if err := os.WriteFile(path, nil, 0o600); err != nil { // named, never synced: empty
			return err
		}
	}
	return os.Chmod(path, o.mode)
}

func kindOf(mode fs.FileMode) kind {
	switch {
	case mode.IsDir():
		return kindDir
	case mode&fs.ModeSymlink != 0:
		return kindSymlink
	default:
		return kindFile
	}
}

func inode(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Ino
	}
	return 0
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close() //nolint:errcheck // read-only
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	return errors.Join(err, dst.Close())
}
