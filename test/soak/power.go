package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/hookjet/hookjet/internal/powercut"
)

// powerFS is the store directory of one node on internal/powercut's FUSE
// filesystem: a cut puts the backing directory back to what the node had
// fsynced, and the next mount starts its next life.
type powerFS struct {
	backing, mountpoint string

	mu sync.Mutex
	fs *powercut.FS // nil while unmounted
}

func newPowerFS(backing, mountpoint string) (*powerFS, error) {
	for _, d := range []string{backing, mountpoint} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	p := &powerFS{backing: backing, mountpoint: mountpoint}
	return p, p.mount()
}

func (p *powerFS) mount() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fs != nil {
		return fmt.Errorf("power-cut filesystem: %s already mounted", p.mountpoint)
	}
	fs, err := powercut.Mount(p.backing, p.mountpoint)
	if err != nil {
		return err
	}
	p.fs = fs
	return nil
}

// cut is the power cut; the node using the mount must be dead already.
func (p *powerFS) cut() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fs == nil {
		return fmt.Errorf("power-cut filesystem: %s not mounted", p.mountpoint)
	}
	err := p.fs.Cut()
	p.fs = nil
	return err
}

// unmount unmounts cleanly at the end of the run.
func (p *powerFS) unmount() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fs == nil {
		return nil
	}
	err := p.fs.Unmount()
	p.fs = nil
	return err
}
