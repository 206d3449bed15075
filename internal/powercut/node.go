package powercut

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a loopback node that tells the model about writes, syncs and
// creations.
type node struct {
	*fs.LoopbackNode
	m *model
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
	_ fs.NodeAllocater      = (*node)(nil)
)

// WrapChild makes every child of a node a node.
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if ln, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: ln, m: n.m}
	}
	return ops
}

func (n *node) rel() string { return n.Path(n.Root()) }

func (n *node) isDir() bool { return n.StableAttr().Mode&syscall.S_IFMT == syscall.S_IFDIR }

// Fsync records the sync of a file or (without a directory handle of
// ours) a directory. The backing file is not synced: the model is the disk.
func (n *node) Fsync(_ context.Context, _ fs.FileHandle, _ uint32) syscall.Errno {
	return fs.ToErrno(n.m.synced(n.StableAttr().Ino, n.rel(), n.isDir()))
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ch, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return ch, fh, fuseFlags, errno
	}
	n.m.created(ch.StableAttr().Ino, kindFile)
	return ch, n.wrap(fh, ch, flags), fuseFlags, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return fh, fuseFlags, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		n.m.truncated(n.StableAttr().Ino, 0)
	}
	return n.wrap(fh, n.EmbeddedInode(), flags), fuseFlags, 0
}

func (n *node) wrap(fh fs.FileHandle, ino *fs.Inode, flags uint32) fs.FileHandle {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return fh
	}
	return &file{LoopbackFile: lf, n: ino, m: n.m, sync: flags&(syscall.O_SYNC|syscall.O_DSYNC) != 0}
}

func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if f, ok := fh.(*file); ok {
		fh = f.LoopbackFile // LoopbackNode.Setattr delegates to a LoopbackFile's own
	}
	errno := n.LoopbackNode.Setattr(ctx, fh, in, out)
	if sz, ok := in.GetSize(); ok && errno == 0 {
		n.m.truncated(n.StableAttr().Ino, int64(sz))
	}
	return errno
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		n.m.created(ch.StableAttr().Ino, kindDir)
	}
	return ch, errno
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	if errno == 0 {
		n.m.created(ch.StableAttr().Ino, kindFile)
	}
	return ch, errno
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	if errno == 0 {
		n.m.created(ch.StableAttr().Ino, kindSymlink)
	}
	return ch, errno
}

// OpendirHandle returns a directory handle whose Fsyncdir the model sees.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return fh, fuseFlags, errno
	}
	d := &dir{n: n}
	d.FileReaddirenter, _ = fh.(fs.FileReaddirenter)
	d.FileReleasedirer, _ = fh.(fs.FileReleasedirer)
	d.FileSeekdirer, _ = fh.(fs.FileSeekdirer)
	return d, fuseFlags, 0
}

// CopyFileRange is refused, so that copies go through Write.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

// Allocate is refused: fallocate would change sizes behind the model.
func (n *node) Allocate(context.Context, fs.FileHandle, uint64, uint64, uint32) syscall.Errno {
	return syscall.ENOTSUP
}

// file is an open file: writes go to the backing file and into the model.
type file struct {
	*fs.LoopbackFile
	n    *fs.Inode
	m    *model
	sync bool // opened O_SYNC or O_DSYNC
}

var (
	_ fs.FileWriter          = (*file)(nil)
	_ fs.FileFsyncer         = (*file)(nil)
	_ fs.FilePassthroughFder = (*file)(nil)
)

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, errno := f.LoopbackFile.Write(ctx, data, off)
	if n > 0 {
		if err := f.m.wrote(f.n.StableAttr().Ino, f.n.Path(f.n.Root()), data[:n], off, f.sync); err != nil {
			return n, fs.ToErrno(err)
		}
	}
	return n, errno
}

func (f *file) Fsync(context.Context, uint32) syscall.Errno {
	return fs.ToErrno(f.m.synced(f.n.StableAttr().Ino, f.n.Path(f.n.Root()), false))
}

// PassthroughFd refuses kernel passthrough: writes must reach Write.
func (f *file) PassthroughFd() (int, bool) { return 0, false }

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	errno := f.LoopbackFile.Setattr(ctx, in, out)
	if sz, ok := in.GetSize(); ok && errno == 0 {
		f.m.truncated(f.n.StableAttr().Ino, int64(sz))
	}
	return errno
}

func (f *file) Allocate(context.Context, uint64, uint64, uint32) syscall.Errno {
	return syscall.ENOTSUP
}

// dir is an open directory: its Fsyncdir makes its entries durable.
type dir struct {
	fs.FileReaddirenter
	fs.FileReleasedirer
	fs.FileSeekdirer
	n *node
}

func (d *dir) Fsyncdir(context.Context, uint32) syscall.Errno {
	return fs.ToErrno(d.n.m.synced(d.n.StableAttr().Ino, d.n.rel(), true))
}
