// Package powercut is a FUSE filesystem for tests that forgets, at a
// simulated power cut, everything that was not fsynced: the technique of
// Jepsen's LazyFS, owned by the project.
//
// [Mount] mounts a passthrough (loopback) view of a backing directory. Every
// operation reaches the backing directory at once, so the processes using
// the mount see an ordinary filesystem. Beside it, the filesystem keeps what
// a disk without a journal would hold after losing power:
//
//   - a file's content as of its last fsync (fdatasync, or a write through a
//     descriptor opened with O_SYNC or O_DSYNC, counts too); writes and
//     truncations since are pending;
//   - a directory's entries (creations, renames, unlinks) as of its last
//     fsync. Fsyncing a file or directory that has no durable name yet also
//     makes its current name (and its parents') durable, as a file system
//     does for a newly created file that is synced;
//   - what existed when the filesystem was mounted, which counts as synced.
//
// [FS.Cut] is the power cut: once the processes using the mount are dead
// (kill -9), it unmounts and rewrites the backing directory to exactly that
// durable state. Files whose name never became durable are gone; a file
// whose name is durable but whose content was never synced comes back
// empty. Mount the backing directory again to start the next life.
//
// The model is deliberately hard on its users and simpler than a disk in
// one way: it never keeps part of an unsynced write (no torn writes), and
// it does not reorder writes between syncs.
//
// The filesystem is served by goroutines of the process that mounted it:
// that process must not mmap files of the mount (bbolt does), since a page
// fault on them blocks the thread, and with it the scheduler slot, that
// might be needed to answer it. Read such files from the backing directory
// once the processes writing them are dead. Mounting needs root and
// /dev/fuse ([Available]); the filesystem mounts with mount(2) directly,
// without the fusermount binary.
package powercut
