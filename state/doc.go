// Package state opens hookjet's local state file, the one bbolt database under
// data_dir that holds the breaker, latency and delivery-ledger state.
//
// Open turns the two failures an operator can act on into clear errors: a file
// locked by another process (ErrLocked: two hookjet processes pointed at the
// same data_dir) and a file that is not a usable bbolt database (ErrCorrupt).
// Callers own the returned *bolt.DB and must Close it after every user of the
// file has stopped.
package state
