package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// behaviour is how the receiver answers one endpoint.
type behaviour uint8

const (
	healthy     behaviour = iota // read the body, answer 204
	slow                         // answer 204 after slowDelay
	dead                         // never answer: wait until the client gives up
	unavailable                  // answer 503 at once, always
	refused                      // nothing listens: the endpoint's URL is a closed port
	failFirst                    // answer 503 to an event's first request (of one event in tally.failOneIn), then as healthy
)

const (
	slowDelay = 2 * time.Second
	deadWait  = 30 * time.Second
	// sigSample: one request in sigSample has its signature verified in
	// full; every request must carry the headers.
	sigSample = 256
)

// receiver is the loopback HTTP server a scenario delivers to: one listener,
// path /e/<endpoint index> per endpoint. Each scenario has its own, closed at
// its end, so no keep-alive connection (and no goroutine on either side of
// one) outlives the scenario.
type receiver struct {
	srv   *http.Server
	ln    net.Listener
	base  string // http://127.0.0.1:port
	key   []byte // decoded signing secret
	x     *tally
	bufs  sync.Pool
	done  chan struct{}
	close func()
}

// newReceiver starts a receiver that counts requests in x and checks
// signatures made with key.
func newReceiver(key []byte, x *tally) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	return newReceiverOn(ln, key, x), nil
}

// newReceiverOn is newReceiver on a listener the caller opened (the outside
// process of cost116 gets its listener from the measured one).
func newReceiverOn(ln net.Listener, key []byte, x *tally) *receiver {
	r := &receiver{
		ln:   ln,
		base: "http://" + ln.Addr().String(),
		key:  key,
		x:    x,
		bufs: sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 1024)) }},
		done: make(chan struct{}),
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	// Close stops the server and every connection; handlers waiting for a
	// dead endpoint's client see their request context end.
	r.close = sync.OnceFunc(func() {
		_ = r.srv.Close()
		<-r.done
	})
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	return r
}

// url is the URL of endpoint i.
func (r *receiver) url(i int) string { return r.base + "/e/" + strconv.Itoa(i) }

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	buf := r.bufs.Get().(*bytes.Buffer)
	defer func() { buf.Reset(); r.bufs.Put(buf) }()
	if _, err := buf.ReadFrom(req.Body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	body := buf.Bytes()
	x := r.x
	ep, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/e/"))
	if err != nil || ep < 0 || ep >= len(x.behave) {
		x.bad.Add(1)
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if x.keyFails(body) {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	switch x.behave[ep] {
	case failFirst:
		if n, _, ok := parsePayload(body); ok && x.failOnce(n) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
	case slow:
		t := time.NewTimer(x.slowDelay())
		select {
		case <-t.C:
		case <-req.Context().Done():
			t.Stop()
			return
		}
	case unavailable:
		x.deadRequests.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case dead:
		t := time.NewTimer(deadWait)
		defer t.Stop()
		select {
		case <-t.C:
			w.WriteHeader(http.StatusServiceUnavailable)
		case <-req.Context().Done():
		}
		x.deadRequests.Add(1)
		return
	}
	x.record(ep, body, req.Header, r.key)
	w.WriteHeader(http.StatusNoContent)
}

// tally counts one scenario's requests at the receiver. Event n goes to
// endpoint n % endpoints; each endpoint expects its share of events.
type tally struct {
	behave   []behaviour
	signed   bool // hookjet run: every request must be signed
	events   int
	expected []int64 // per endpoint
	// route is the endpoint event n goes to; nil: n % endpoints.
	route func(n int) int
	// slowFor is how long a slow endpoint takes to answer; 0: slowDelay.
	slowFor time.Duration
	// failOneIn: a failFirst endpoint refuses the first request of the
	// events whose number is a multiple of it; 0 or 1: of every event.
	failOneIn int
	// keys is the number of ordering keys (event n has key k<n % keys); 0:
	// none. Key k0's requests answer 500 for failKeyFor from the first of
	// them, until failKeyUntil (unix ns). firstAt is when each event was
	// first answered 2xx (test/bench/ordered.go).
	keys         int
	failKeyFor   time.Duration
	failKeyUntil atomic.Int64
	keyFailed    atomic.Int64
	firstAt      []atomic.Int64

	requests     atomic.Int64
	unique       atomic.Int64
	duplicates   atomic.Int64
	bad          atomic.Int64 // unparsable, misrouted or unknown path
	deadRequests atomic.Int64
	sigChecked   atomic.Int64
	sigBad       atomic.Int64

	seen     []atomic.Bool  // per event: delivered at least once
	latency  []atomic.Int64 // per event: publish→first delivery, ns
	perEP    []atomic.Int64 // unique deliveries per endpoint
	epDoneAt []atomic.Int64 // per endpoint: unix ns its last expected event arrived
	failedAt []atomic.Int64 // per event, failFirst endpoints only: unix ns of the refused first request
	retryGap []atomic.Int64 // per event, failFirst endpoints only: ns from the refused request to the next one

	waitHealthy atomic.Int64 // healthy endpoints still missing events
	doneOnce    sync.Once
	done        chan struct{} // closed when every healthy endpoint got all its events
}

// newTally prepares counters for events events over len(behave) endpoints.
// With events == 0 (the raw ceiling) it only counts requests.
func newTally(behave []behaviour, events int, signed bool) *tally {
	return newRoutedTally(behave, events, signed, nil)
}

// newRoutedTally is newTally for events that go to endpoint route(n) (nil:
// n % endpoints).
func newRoutedTally(behave []behaviour, events int, signed bool, route func(n int) int) *tally {
	x := &tally{behave: behave, signed: signed, events: events, route: route, done: make(chan struct{})}
	if events == 0 {
		return x
	}
	e := len(behave)
	if slices.Contains(behave, failFirst) {
		x.failedAt = make([]atomic.Int64, events)
		x.retryGap = make([]atomic.Int64, events)
	}
	x.seen = make([]atomic.Bool, events)
	x.latency = make([]atomic.Int64, events)
	x.perEP = make([]atomic.Int64, e)
	x.epDoneAt = make([]atomic.Int64, e)
	x.expected = make([]int64, e)
	for n := range events {
		x.expected[x.endpointOf(n)]++
	}
	var waiting int64
	for i, b := range behave {
		if b == healthy && x.expected[i] > 0 {
			waiting++
		}
	}
	x.waitHealthy.Store(waiting)
	if waiting == 0 {
		close(x.done)
	}
	return x
}

func (x *tally) record(ep int, body []byte, h http.Header, key []byte) {
	now := time.Now().UnixNano()
	x.requests.Add(1)
	n, sent, ok := parsePayload(body)
	if x.events == 0 {
		if !ok {
			x.bad.Add(1)
		}
		return
	}
	if !ok || n < 0 || n >= x.events || x.endpointOf(n) != ep {
		x.bad.Add(1)
		return
	}
	if x.signed {
		x.checkSignature(n, h, body, key)
	}
	if !x.seen[n].CompareAndSwap(false, true) {
		x.duplicates.Add(1)
		return
	}
	x.latency[n].Store(now - sent)
	if x.firstAt != nil {
		x.firstAt[n].Store(now)
	}
	x.unique.Add(1)
	if x.perEP[ep].Add(1) == x.expected[ep] {
		x.epDoneAt[ep].Store(now)
		if x.behave[ep] == healthy && x.waitHealthy.Add(-1) == 0 {
			x.doneOnce.Do(func() { close(x.done) })
		}
	}
}

// checkSignature checks that the Standard Webhooks headers are there and, for
// one request in sigSample, that the first signature is right.
func (x *tally) checkSignature(n int, h http.Header, body, key []byte) {
	id, ts, sig := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || !strings.HasPrefix(sig, "v1,") {
		x.sigBad.Add(1)
		return
	}
	if n%sigSample != 0 {
		return
	}
	x.sigChecked.Add(1)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if first, _, _ := strings.Cut(sig, " "); first != want || id != eventID(n) {
		x.sigBad.Add(1)
	}
}

// healthyDeliveries is the number of events delivered to healthy endpoints
// and when the last of them (of those that completed) arrived.
func (x *tally) healthyDeliveries() (n int64, last time.Time) {
	var lastNs int64
	for i, b := range x.behave {
		if b != healthy {
			continue
		}
		n += x.perEP[i].Load()
		lastNs = max(lastNs, x.epDoneAt[i].Load())
	}
	if lastNs > 0 {
		last = time.Unix(0, lastNs)
	}
	return n, last
}

// healthyExpected is the number of events bound for healthy endpoints.
func (x *tally) healthyExpected() int64 {
	var n int64
	for i, b := range x.behave {
		if b == healthy {
			n += x.expected[i]
		}
	}
	return n
}

// healthyLatencies returns the publish→delivery latencies of events
// delivered to healthy endpoints.
func (x *tally) healthyLatencies() []time.Duration {
	out := make([]time.Duration, 0, x.unique.Load())
	for n := range x.events {
		if x.behave[x.endpointOf(n)] != healthy || !x.seen[n].Load() {
			continue
		}
		out = append(out, time.Duration(x.latency[n].Load()))
	}
	return out
}

// endpointOf is the endpoint event n goes to.
func (x *tally) endpointOf(n int) int {
	if x.route != nil {
		return x.route(n)
	}
	return n % len(x.behave)
}

func (x *tally) slowDelay() time.Duration {
	if x.slowFor > 0 {
		return x.slowFor
	}
	return slowDelay
}

// failOnce reports whether this request is event n's first, noting when it
// came; for a later one it notes the time since the first.
func (x *tally) failOnce(n int) bool {
	if n < 0 || n >= len(x.failedAt) || x.failOneIn > 1 && n%x.failOneIn != 0 {
		return false
	}
	now := time.Now().UnixNano()
	if x.failedAt[n].CompareAndSwap(0, now) {
		return true
	}
	x.retryGap[n].CompareAndSwap(0, now-x.failedAt[n].Load())
	return false
}

// wait waits until every healthy endpoint has all its events, ctx ends, or
// the deadline passes; it reports whether everything arrived.
func (x *tally) wait(ctx context.Context, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-x.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// rawClient is the plain keep-alive client of the raw ceiling.
func rawClient(concurrency int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        concurrency,
		MaxIdleConnsPerHost: concurrency,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// post sends one raw request and drains the answer.
func post(ctx context.Context, c *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err == nil && resp.StatusCode/100 != 2 {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return err
}
