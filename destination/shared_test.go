package destination_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookjet/hookjet/destination"
)

type fakeConn struct {
	id     int
	closed atomic.Bool
}

func TestSharedOnePerKeyClosedWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dials atomic.Int32
		var closed []*fakeConn
		var mu sync.Mutex
		s := destination.NewShared(time.Minute, func(c *fakeConn) {
			c.closed.Store(true)
			mu.Lock()
			closed = append(closed, c)
			mu.Unlock()
		})
		dial := func(context.Context) (*fakeConn, error) {
			return &fakeConn{id: int(dials.Add(1))}, nil
		}
		ctx := context.Background()
		// 10,000 attempts, 100 at a time, on one key: one connection
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				for range 100 {
					l, err := s.Acquire(ctx, "cluster-a", dial)
					if err != nil {
						t.Error(err)
						return
					}
					l.Release()
				}
			})
		}
		wg.Wait()
		if dials.Load() != 1 || s.Len() != 1 {
			t.Fatalf("dials %d, open %d: want 1 and 1", dials.Load(), s.Len())
		}
		l, _ := s.Acquire(ctx, "cluster-b", dial)
		if s.Len() != 2 {
			t.Fatalf("open %d, want 2", s.Len())
		}
		// idle: cluster-a closes after a minute, cluster-b is in use
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if s.Len() != 1 || len(closed) != 1 || closed[0].id != 1 {
			t.Fatalf("open %d, closed %v", s.Len(), closed)
		}
		l.Release()
		time.Sleep(30 * time.Second)
		l2, _ := s.Acquire(ctx, "cluster-b", dial) // used again before its minute: kept
		l2.Release()
		time.Sleep(45 * time.Second)
		synctest.Wait()
		if s.Len() != 1 {
			t.Fatalf("cluster-b closed while in use within the idle time: open %d", s.Len())
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if s.Len() != 0 || len(closed) != 2 {
			t.Fatalf("open %d, closed %d", s.Len(), len(closed))
		}
	})
}

func TestSharedDiscardAndFailedDial(t *testing.T) {
	var n atomic.Int32
	s := destination.NewShared(time.Hour, func(c *fakeConn) { c.closed.Store(true) })
	boom := errors.New("connection refused")
	fail := true
	dial := func(context.Context) (*fakeConn, error) {
		if fail {
			return nil, boom
		}
		return &fakeConn{id: int(n.Add(1))}, nil
	}
	ctx := context.Background()
	if _, err := s.Acquire(ctx, "k", dial); !errors.Is(err, boom) || s.Len() != 0 {
		t.Fatalf("failed dial: %v, open %d", err, s.Len())
	}
	fail = false
	l, err := s.Acquire(ctx, "k", dial)
	if err != nil {
		t.Fatal(err)
	}
	c := l.Conn()
	l.Discard() // broken: the next attempt dials again; closed once released
	if c.closed.Load() || s.Len() != 0 {
		t.Fatal("closed while leased, or still shared")
	}
	l2, _ := s.Acquire(ctx, "k", dial)
	if l2.Conn() == c {
		t.Fatal("a discarded connection handed out again")
	}
	l.Release()
	if !c.closed.Load() {
		t.Fatal("a discarded connection not closed once released")
	}
	s.Close()
	if l2.Conn().closed.Load() {
		t.Fatal("closed while in use")
	}
	l2.Release()
	if !l2.Conn().closed.Load() {
		t.Fatal("not closed when released after Close")
	}
	if _, err := s.Acquire(ctx, "k", dial); !errors.Is(err, destination.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestExpandAndHeaders(t *testing.T) {
	r := destination.Request{EventID: "evt_1", EventType: "order.created", Payload: []byte("{}"), OrderingKey: "k"}
	if got := destination.Expand("hooks.{tenant}.{type}", &r); got != "hooks._.order.created" {
		t.Error(got)
	}
	r.Tenant = "acme"
	if got := destination.Expand("hooks.{tenant}.{type}", &r); got != "hooks.acme.order.created" {
		t.Error(got)
	}
	for template, want := range map[string]string{
		"{type}":                 "order.created",
		"{{type}}":               "{order.created}",
		"a{b{tenant}{":           "a{bacme{",
		"{typ}.{type}{tenant}x{": "{typ}.order.createdacmex{",
		"plain":                  "plain",
	} {
		if got := destination.Expand(template, &r); got != want {
			t.Errorf("Expand(%q) = %q, want %q", template, got, want)
		}
	}
	h := destination.MessageHeaders(nil, &r, time.Unix(1700000000, 0))
	want := []destination.Header{{"webhook-id", "evt_1"}, {"webhook-timestamp", "1700000000"}, {"Hookjet-Event-Type", "order.created"}, {"Hookjet-Tenant", "acme"}, {"Hookjet-Ordering-Key", "k"}}
	if len(h) != len(want) {
		t.Fatalf("%v", h)
	}
	for i := range want {
		if h[i] != want[i] {
			t.Errorf("header %d = %v, want %v", i, h[i], want[i])
		}
	}
}
