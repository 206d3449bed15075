package genstore

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// EachGen calls fn, in one read transaction, for every sealed generation's
// bucket, oldest first (or newest first with reverse), until fn returns
// false. The bucket is valid only during fn.
func (f *File) EachGen(reverse bool, fn func(g uint64, b *bolt.Bucket) bool) error {
	return f.db.View(func(tx *bolt.Tx) error {
		c := tx.Cursor()
		var k []byte
		if reverse {
			k, _ = Before(c, []byte{'h'})
		} else {
			k, _ = c.Seek([]byte{'g'})
		}
		for ; len(k) == 9 && k[0] == 'g'; k = step(c, reverse) {
			if b := tx.Bucket(k); b != nil && !fn(binary.BigEndian.Uint64(k[1:]), b) {
				return nil
			}
		}
		return nil
	})
}

func step(c *bolt.Cursor, reverse bool) []byte {
	if reverse {
		k, _ := c.Prev()
		return k
	}
	k, _ := c.Next()
	return k
}

// Before moves c to the last key below key and returns it (nil: none),
// where a walk newest first starts.
func Before(c *bolt.Cursor, key []byte) ([]byte, []byte) {
	if k, _ := c.Seek(key); k == nil {
		return c.Last()
	}
	return c.Prev()
}
