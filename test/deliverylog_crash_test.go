package test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	hjs "github.com/hookjet/hookjet/jetstream"
)

// TestDeliveryLogAfterSIGKILL kills `hookjet serve` (embedded NATS, the log
// in PersistMode async) with SIGKILL and starts it again: every record that
// was visible well before the kill (a first batch, before a second batch was
// delivered) is still in HOOKJET_LOG, once each.
func TestDeliveryLogAfterSIGKILL(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) { w.WriteHeader(http.StatusOK) })
	_, cfgPath, natsAddr, adminAddr := binaryConfig(t, r.URL)
	p := startBinary(t, cfgPath, adminAddr)
	nc, err := nats.Connect("nats://"+natsAddr, nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(ids []string) {
		for _, id := range ids {
			m := nats.NewMsg(hjs.EventsPrefix + "order.created")
			m.Data = []byte(`{}`)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := js.PublishMsg(ctx, m, natsjs.WithMsgID(id))
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	first, second := eventIDs("evt_log_a", 100), eventIDs("evt_log_b", 100)
	publish(first)
	waitAllDelivered(t, r, first, 30*time.Second)
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if n := countLogged(t, js, first); n != len(first) {
			return fmt.Errorf("%d of %d records stored", n, len(first))
		}
		return nil
	})
	publish(second)
	waitAllDelivered(t, r, second, 30*time.Second)
	nc.Close()
	_ = p.signal(t, syscall.SIGKILL)

	p = startBinary(t, cfgPath, adminAddr)
	nc2, js2 := connectJS(t, "nats://"+natsAddr)
	defer nc2.Close()
	if n := countLogged(t, js2, first); n != len(first) {
		t.Errorf("after SIGKILL %d of the first batch's %d records are in HOOKJET_LOG", n, len(first))
	}
	t.Logf("after SIGKILL: %d of the second batch's %d records (delivered just before the kill) survived", countLogged(t, js2, second), len(second))
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// countLogged counts the events of ids that have exactly one record in
// HOOKJET_LOG (their one successful attempt to endpoint sink).
func countLogged(t *testing.T, js natsjs.JetStream, ids []string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	x, err := hjs.FollowLog(js, filepath.Join(t.TempDir(), "log-index.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	r := hjs.NewLogReader(js.Conn(), js, x)
	n := 0
	for _, id := range ids {
		recs, err := r.EventRecords(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 1 && recs[0].Endpoint == "sink" && recs[0].Class == "success" {
			n++
		}
	}
	return n
}
