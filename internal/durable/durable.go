package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CreateFile creates path with data and mode perm, refusing to replace an
// existing file (the error wraps fs.ErrExist): the data goes to a temporary
// file in the same directory, which is fsynced, linked to path and removed,
// and then the directory is fsynced. A crash or power cut at any point
// leaves either no file at path or the whole of data.
func CreateFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) //nolint:errcheck // gone already once linked and removed
	_, werr := f.Write(data)
	merr := f.Chmod(perm)
	serr := f.Sync()
	if err := errors.Join(werr, merr, serr, f.Close()); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	if err := os.Remove(tmp); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir fsyncs the directory dir, making the creations, renames and
// removals of names in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	serr := d.Sync()
	if err := errors.Join(serr, d.Close()); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
