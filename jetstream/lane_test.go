package jetstream

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
)

// A lane batch is stored whole, in order, from the sequence returned; a
// batch that repeats a stored Nats-Msg-Id is refused whole.
func TestPublishLaneBatchStoresInOrder(t *testing.T) {
	js, _ := startEvents(t)
	if _, err := js.Publish(t.Context(), LanePrefix+"ep", []byte("before")); err != nil {
		t.Fatal(err)
	}
	batch := func(ids ...string) []*nats.Msg {
		var out []*nats.Msg
		for _, id := range ids {
			m := nats.NewMsg(LanePrefix + "ep")
			m.Header.Set(HdrMsgID, id)
			m.Data = []byte(id)
			out = append(out, m)
		}
		return out
	}
	first, err := PublishLaneBatch(t.Context(), js.Conn(), batch("a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	if first != 2 {
		t.Errorf("first sequence %d, want 2", first)
	}
	st, err := js.Stream(t.Context(), LaneStream)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"a", "b", "c"} {
		m, err := st.GetMsg(t.Context(), first+uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Data) != want {
			t.Errorf("seq %d: %q, want %q", first+uint64(i), m.Data, want)
		}
	}
	if _, err := PublishLaneBatch(t.Context(), js.Conn(), batch("d", "b")); err == nil {
		t.Error("a batch repeating id b was stored")
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(info.State.Msgs, info.State.LastSeq); got != "4 4" {
		t.Errorf("messages, last sequence: %s, want 4 4", got)
	}
}
