package powercut

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is a mounted power-cut filesystem. Cut or Unmount it exactly once.
type FS struct {
	backing, mountpoint string
	m                   *model
	srv                 *fuse.Server
}

// Available reports why mounting cannot work here (not root, no
// /dev/fuse), or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("powercut: mounting a FUSE filesystem needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	return nil
}

// Mount mounts at mountpoint (an existing, empty directory) a view of the
// backing directory (on one filesystem, not inside mountpoint) and returns
// once it serves. What backing holds at that moment counts as synced.
func Mount(backing, mountpoint string) (*FS, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, fmt.Errorf("powercut: backing directory: %w", err)
	}
	shadow, err := os.MkdirTemp(filepath.Dir(backing), ".powercut-shadow-")
	if err != nil {
		return nil, fmt.Errorf("powercut: %w", err)
	}
	m, err := newModel(backing, shadow)
	if err != nil {
		_ = os.RemoveAll(shadow)
		return nil, fmt.Errorf("powercut: record %s: %w", backing, err)
	}
	lr := &fs.LoopbackRoot{Path: backing, Dev: st.Dev}
	root := &node{LoopbackNode: &fs.LoopbackNode{RootData: lr}, m: m}
	lr.RootNode = root
	srv, err := fs.Mount(mountpoint, root, &fs.Options{
		RootStableAttr: &fs.StableAttr{Ino: st.Ino},
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true, // mount(2) as root; no fusermount needed
			FsName:            backing,
			Name:              "powercut",
			DisableXAttrs:     true,
		},
	})
	if err != nil {
		_ = os.RemoveAll(shadow)
		return nil, fmt.Errorf("powercut: mount %s: %w", mountpoint, err)
	}
	return &FS{backing: backing, mountpoint: mountpoint, m: m, srv: srv}, nil
}

// Cut is the power cut: it unmounts (kill the processes using the mount
// first) and puts the backing directory back to what was synced.
func (f *FS) Cut() error {
	if err := f.unmount(); err != nil {
		return err
	}
	err := f.m.restore()
	return errors.Join(err, os.RemoveAll(f.m.shadow))
}

// Unmount unmounts cleanly: the backing directory keeps everything written.
func (f *FS) Unmount() error {
	err := f.unmount()
	return errors.Join(err, os.RemoveAll(f.m.shadow))
}

func (f *FS) unmount() error {
	if err := f.srv.Unmount(); err != nil {
		// Busy: detach it, so that the mount point is free again.
		if derr := syscall.Unmount(f.mountpoint, syscall.MNT_DETACH); derr != nil {
			return fmt.Errorf("powercut: unmount %s: %w", f.mountpoint, errors.Join(err, derr))
		}
	}
	f.srv.Wait()
	return nil
}
