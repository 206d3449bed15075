// Package testkit holds the helpers hookjet's tests share: a manual [Clock],
// bbolt files opened with an integrity check at the end of the test
// ([OpenDB], [CloseDB]), a reference Standard Webhooks signer written
// independently of package signature ([RefSign]) and a [LockedBuffer] for
// output written from several goroutines.
//
// Production code never imports it.
package testkit
