package settle

import "testing"

// A read of the server's figure taken while tasks are on their way must not
// forget them: the figure cannot hold a task whose PubAck has not come.
func TestTaskBytesReadKeepsReservationsInFlight(t *testing.T) {
	var tb TaskBytes
	const max = 100
	for range 5 {
		if !tb.Reserve(10, max) {
			t.Fatal("reservation within the limit refused")
		}
	}
	tb.setRead(0, tb.beginRead()) // the server holds none of them yet
	if got := tb.Used(); got != 50 {
		t.Fatalf("used after a read = %d, want 50 (five reservations in flight)", got)
	}
	for range 5 {
		if !tb.Reserve(10, max) {
			t.Fatal("reservation within the limit refused")
		}
	}
	if tb.Reserve(10, max) {
		t.Fatal("reservation past the limit accepted")
	}
}

// A task stored while a read is under way is counted until a later read
// includes it, and a release gives its bytes back.
func TestTaskBytesStoredDuringARead(t *testing.T) {
	var tb TaskBytes
	tb.Reserve(30, 100)
	mark := tb.beginRead()
	tb.Stored(30)       // the PubAck arrives while the read is under way
	tb.setRead(0, mark) // and the read did not see it
	if got := tb.Used(); got != 30 {
		t.Fatalf("used = %d, want 30", got)
	}
	tb.setRead(30, tb.beginRead()) // the next read holds it
	if got := tb.Used(); got != 30 {
		t.Fatalf("used = %d, want 30", got)
	}
	tb.Reserve(20, 100)
	tb.Release(20)
	if got := tb.Used(); got != 30 {
		t.Fatalf("used after a release = %d, want 30", got)
	}
}
