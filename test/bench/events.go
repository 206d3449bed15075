package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// events1m measures GET /api/v1/events, the event list, at a million
// stored events: hookjet (embedded NATS, nats.sync 2m for the fill, no
// endpoints) stores -events-stored events published asynchronously to
// HOOKJET_EVENTS (20 types, 100 tenants and every tenth event without one,
// an ordering key on every other, 200-byte payloads), its event index
// (package eventindex, data_dir/event-index.db) follows them, and then
// pages are asked through the admin API over HTTP, as a client asks them:
// the newest page, pages at random depths (cursors), by type, by tenant,
// by tenant and type, by a narrow and a broad id prefix, and within random
// time windows. Its target: a page's p99 <= 100 ms.

// eventListStats is what events1m measures.
type eventListStats struct {
	Stored         int                     `json:"stored"`
	FillSeconds    float64                 `json:"fill_seconds"`
	IndexedSeconds float64                 `json:"indexed_seconds"` // from the first publish until the list shows the last event
	IndexFileMB    float64                 `json:"index_file_mb"`
	Pages          latencyStats            `json:"pages"` // every page asked
	ByKind         map[string]latencyStats `json:"by_kind"`
	EmptyPages     int                     `json:"empty_pages"` // pages with no event (should be 0: every query matches)
}

const (
	eventListTypes   = 20
	eventListTenants = 100
)

func (b *bench) eventScenarios(ctx context.Context) map[string][]runFunc {
	return map[string][]runFunc{"events1m": {func() (*result, error) { return b.eventList(ctx, b.p.eventsStored) }}}
}

// eventList runs events1m with n stored events.
func (b *bench) eventList(ctx context.Context, n int) (*result, error) {
	r := &result{Name: "events1m", Events: n,
		Description: fmt.Sprintf("%d events stored in HOOKJET_EVENTS and followed into the event index; pages of GET /api/v1/events over HTTP: newest, random cursors, by type, tenant, tenant and type, id prefix, time window", n)}
	h, err := startHookjet(ctx, hookjetSpec{sync: "2m", concurrency: 16, maxInFlight: 1, logOff: true}, b.logOut)
	if err != nil {
		return r, err
	}
	defer h.stop()
	st := &eventListStats{Stored: n, ByKind: map[string]latencyStats{}}
	r.EventList = st
	t0 := time.Now()
	first, last, err := b.fillEvents(ctx, h, n)
	if err != nil {
		return r, err
	}
	st.FillSeconds = round(time.Since(t0).Seconds(), 2)
	b.say("events1m: %d events stored in %.1f s", n, st.FillSeconds)
	base := "http://" + h.srv.AdminAddr() + "/api/v1/events"
	hc := &http.Client{Timeout: 30 * time.Second}
	for {
		pg, _, err := getEventPage(ctx, hc, base+"?limit=1")
		if err == nil && len(pg.Events) == 1 && pg.Events[0].ID == fmt.Sprintf("evt_%d", n-1) {
			break
		}
		if time.Since(t0) > 30*time.Minute {
			return r, fmt.Errorf("events1m: the index did not reach the last event in 30 minutes (%w)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	st.IndexedSeconds = round(time.Since(t0).Seconds(), 2)
	if fi, err := os.Stat(filepath.Join(h.dir, "event-index.db")); err == nil {
		st.IndexFileMB = round(float64(fi.Size())/(1<<20), 1)
	}
	b.say("events1m: indexed after %.1f s (event-index.db %.0f MB); asking pages", st.IndexedSeconds, st.IndexFileMB)
	var all []time.Duration
	for kind, queries := range eventListQueries(n, first, last) {
		var ds []time.Duration
		for _, q := range queries {
			pg, took, err := getEventPage(ctx, hc, base+"?"+q)
			if err != nil {
				return r, fmt.Errorf("events1m: %s: %w", q, err)
			}
			if len(pg.Events) == 0 {
				st.EmptyPages++
			}
			ds = append(ds, took)
		}
		st.ByKind[kind] = summarise(ds)
		all = append(all, ds...)
	}
	st.Pages = summarise(all)
	r.Complete = true
	r.Notes = append(r.Notes, fmt.Sprintf("%d events stored in %.1f s, listed after %.1f s (event-index.db %.0f MB); %d pages: p50 %.2f ms p99 %.2f ms max %.2f ms",
		n, st.FillSeconds, st.IndexedSeconds, st.IndexFileMB, st.Pages.Count, st.Pages.P50, st.Pages.P99, st.Pages.Max))
	for kind, s := range st.ByKind {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: p50 %.2f ms p99 %.2f ms", kind, s.P50, s.P99))
	}
	return r, nil
}

// fillEvents publishes n events asynchronously and waits for their
// PubAcks; it returns when the first and the last were published.
func (b *bench) fillEvents(ctx context.Context, h *instance, n int) (first, last time.Time, err error) {
	payload := make([]byte, 200)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	copy(payload, `{"pad":"`)
	copy(payload[len(payload)-2:], `"}`)
	first = time.Now()
	for i := range n {
		m := nats.NewMsg("hookjet.events.bench.t" + strconv.Itoa(i%eventListTypes))
		m.Header.Set("Nats-Msg-Id", "evt_"+strconv.Itoa(i))
		if i%10 != 0 {
			m.Header.Set("Hookjet-Tenant", "tenant"+strconv.Itoa(i%eventListTenants))
		}
		if i%2 == 0 {
			m.Header.Set("Hookjet-Ordering-Key", "cust-"+strconv.Itoa(i%1000))
		}
		m.Data = payload
		if _, err := h.js.PublishMsgAsync(m); err != nil {
			return first, last, fmt.Errorf("publish event %d: %w", i, err)
		}
		if i%4000 == 3999 { // the publisher holds at most 4,096 unacknowledged
			select {
			case <-h.js.PublishAsyncComplete():
			case <-ctx.Done():
				return first, last, ctx.Err()
			}
		}
	}
	select {
	case <-h.js.PublishAsyncComplete():
	case <-ctx.Done():
		return first, last, ctx.Err()
	}
	if f := h.pubFailed.Load(); f > 0 {
		return first, last, fmt.Errorf("%d publishes failed", f)
	}
	return first, time.Now(), nil
}

// eventListQueries are the pages events1m asks, by kind: 100 of each,
// at random.
func eventListQueries(n int, first, last time.Time) map[string][]string {
	rng := rand.New(rand.NewPCG(1, 2))
	out := map[string][]string{}
	add := func(kind string, q func() url.Values) {
		for range 100 {
			v := q()
			if v.Get("limit") == "" {
				v.Set("limit", "100")
			}
			out[kind] = append(out[kind], v.Encode())
		}
	}
	cursor := func() string { return strconv.Itoa(1000 + rng.IntN(n-1000)) }
	typ := func() string { return "bench.t" + strconv.Itoa(rng.IntN(eventListTypes)) }
	tenantN := func() int { // tenant0, tenant10, ... hold no event: every tenth event has no tenant
		t := 1 + rng.IntN(eventListTenants-1)
		if t%10 == 0 {
			t++
		}
		return t
	}
	tenant := func() string { return "tenant" + strconv.Itoa(tenantN()) }
	add("newest", func() url.Values { return url.Values{} })
	add("cursor", func() url.Values { return url.Values{"cursor": {cursor()}} })
	add("type", func() url.Values { return url.Values{"type": {typ()}, "cursor": {cursor()}} })
	add("tenant", func() url.Values { return url.Values{"tenant": {tenant()}, "cursor": {cursor()}} })
	add("tenant+type", func() url.Values {
		t := tenantN() // types and tenants share i: pick a type the tenant has
		return url.Values{"tenant": {"tenant" + strconv.Itoa(t)}, "type": {"bench.t" + strconv.Itoa(t%eventListTypes)}}
	})
	add("prefix-narrow", func() url.Values {
		return url.Values{"prefix": {"evt_" + strconv.Itoa(1000+rng.IntN(max(1, n/10-1000)))}}
	})
	add("prefix-broad+tenant", func() url.Values { return url.Values{"prefix": {"evt_"}, "tenant": {tenant()}} })
	span := last.Sub(first)
	add("window", func() url.Values {
		from := first.Add(time.Duration(rng.Int64N(int64(span))))
		return url.Values{"since": {from.UTC().Format(time.RFC3339Nano)}, "until": {from.Add(span / 20).UTC().Format(time.RFC3339Nano)}}
	})
	return out
}

// eventPage is the answer of GET /api/v1/events as the bench reads it.
type eventPage struct {
	Events []struct {
		ID  string `json:"id"`
		Seq uint64 `json:"seq"`
	} `json:"events"`
	Next string `json:"next"`
}

// getEventPage asks one page and says how long the answer took.
func getEventPage(ctx context.Context, hc *http.Client, u string) (eventPage, time.Duration, error) {
	var pg eventPage
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return pg, 0, err
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return pg, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	err = json.NewDecoder(resp.Body).Decode(&pg)
	took := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return pg, took, errors.New(resp.Status)
	}
	return pg, took, err
}

// eventListChecks is events1m's target: a page's p99 at a million events.
func eventListChecks(r *result) []check {
	c := check{name: "event list: a page of GET /api/v1/events at 1 million stored events, p99", goal: "<= 100 ms", unit: "ms", need: "events1m"}
	if r != nil && r.EventList != nil {
		c.value = r.EventList.Pages.P99
		c.ok = ptr(c.value <= 100 && r.Complete && r.EventList.EmptyPages == 0 && r.EventList.Stored >= 1_000_000)
		c.detail = fmt.Sprintf("%d events, %d pages, %d empty", r.EventList.Stored, r.EventList.Pages.Count, r.EventList.EmptyPages)
	}
	return []check{c}
}
