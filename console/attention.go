package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// The endpoints that need attention are found by building every
// endpoint's status (GET /api/v1/endpoints?attention=true), which costs
// about 0.4 s of CPU at 100,000 endpoints. The overview therefore shows a
// snapshot, taken when the console is first used and then again when a
// page asks for one older
// than 40 times what the last one cost (at most attentionMaxAge): in the
// background when it is expensive (only while someone looks), while the
// request waits when it is cheap (small deployments see the present).
const (
	attentionMaxAge = 15 * time.Second
	attentionCap    = 10000 // endpoints a snapshot holds
)

type attentionSnap struct {
	pending bool // the first snapshot is still being taken
	at      time.Time
	took    time.Duration // how long it took to take
	eps     []endpoint    // worst first
	more    bool          // more than attentionCap need attention
	err     error
}

// attention holds the snapshot and the refresh in flight.
type attention struct {
	api        apiClient
	mu         sync.Mutex
	snap       *attentionSnap
	refreshing bool
	wg         sync.WaitGroup
	ctx        context.Context // cancelled by Close
	cancel     context.CancelFunc
}

// newAttention returns the snapshot holder. Nothing is read until the
// console is first used (warm): a hookjet whose console nobody opens never
// pays for a snapshot.
func newAttention(api apiClient) *attention {
	ctx, cancel := context.WithCancel(context.Background())
	return &attention{api: api, ctx: ctx, cancel: cancel}
}

// warm starts taking the first snapshot in the background, once: the
// console's first request (the sign-in page, usually) calls it, so that
// the overview seldom waits for it.
func (a *attention) warm() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.snap != nil || a.refreshing || a.ctx.Err() != nil {
		return
	}
	a.refreshing = true
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.store(a.load(a.ctx))
	}()
}

// get returns a snapshot no older than attentionMaxAge when there is one,
// else the last one while a refresh runs, else a new one.
func (a *attention) get(ctx context.Context) *attentionSnap {
	a.mu.Lock()
	snap := a.snap
	if snap == nil && a.refreshing {
		// The first snapshot is being taken: wait for it rather than
		// take a second one.
		a.mu.Unlock()
		return a.waitFirst(ctx)
	}
	if snap != nil && (time.Since(snap.at) < snap.maxAge() || a.refreshing) {
		a.mu.Unlock()
		return snap
	}
	if snap != nil && snap.took >= cheapSnapshot && a.ctx.Err() == nil {
		a.refreshing = true
		a.wg.Add(1)
		a.mu.Unlock()
		go func() {
			defer a.wg.Done()
			a.store(a.load(a.ctx))
		}()
		return snap
	}
	a.mu.Unlock()
	s := a.load(ctx)
	if s.err == nil {
		a.store(s)
	}
	return s
}

// firstWait is how long a page waits for the first snapshot before it
// answers without it (and reloads itself).
const firstWait = 50 * time.Millisecond

// waitFirst waits up to firstWait for the first snapshot, and takes one
// itself if that failed.
func (a *attention) waitFirst(ctx context.Context) *attentionSnap {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(firstWait)
	for {
		a.mu.Lock()
		snap, refreshing := a.snap, a.refreshing
		a.mu.Unlock()
		switch {
		case snap != nil:
			return snap
		case !refreshing:
			return a.get(ctx)
		case time.Now().After(deadline):
			return &attentionSnap{pending: true, at: time.Now()}
		}
		select {
		case <-ctx.Done():
			return &attentionSnap{at: time.Now(), err: ctx.Err()}
		case <-tick.C:
		}
	}
}

func (a *attention) store(s *attentionSnap) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refreshing = false
	if s.err == nil {
		a.snap = s
	}
}

// load pages through the endpoints that need attention.
func (a *attention) load(ctx context.Context) *attentionSnap {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s := &attentionSnap{at: time.Now()}
	defer func() { s.took = time.Since(s.at) }()
	after := ""
	for len(s.eps) < attentionCap {
		v := url.Values{"attention": {"true"}, "limit": {"1000"}}
		if after != "" {
			v.Set("after", after)
		}
		var pg endpointPage
		if _, s.err = a.api.call(ctx, http.MethodGet, "/api/v1/endpoints?"+v.Encode(), nil, &pg); s.err != nil {
			return s
		}
		for _, e := range pg.Endpoints {
			if needsAttention(e) { // a build without the filter lists every endpoint
				s.eps = append(s.eps, e)
			}
		}
		if pg.Next == "" {
			sortAttention(s.eps)
			return s
		}
		after = pg.Next
	}
	s.more = true
	sortAttention(s.eps)
	return s
}

// cheapSnapshot is how quick a snapshot must have been for the next to be
// taken while the request waits (small deployments see the present).
const cheapSnapshot = 50 * time.Millisecond

// maxAge is how long the snapshot is shown: 40 times what it cost, at most
// attentionMaxAge (about 2.5% of a core while the console is viewed).
func (s *attentionSnap) maxAge() time.Duration {
	return min(attentionMaxAge, 40*s.took)
}

// Close stops a refresh in flight and waits for it.
func (a *attention) Close() {
	a.cancel()
	a.wg.Wait()
}

// page returns the part of the snapshot a listing shows: pageSize
// endpoints from offset, and the next offset (0: none).
func (s *attentionSnap) page(offset int) ([]endpoint, int) {
	if offset >= len(s.eps) {
		return nil, 0
	}
	end := min(offset+pageSize, len(s.eps))
	next := 0
	if end < len(s.eps) {
		next = end
	}
	return s.eps[offset:end], next
}

// offsetOf reads a ?from= offset.
func offsetOf(q url.Values) int {
	n, err := strconv.Atoi(q.Get("from"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
