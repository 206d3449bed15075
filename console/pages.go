package console

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// pageSize is the number of endpoints a listing shows at a time.
const pageSize = 50

// needsAttention mirrors the admin API's attention=true filter, so that a
// build without it still lists only the endpoints that need attention.
func needsAttention(e endpoint) bool {
	return e.Disabled || e.HeldUntil != nil || (e.Breaker.State != "" && e.Breaker.State != "closed") ||
		e.ConsecutiveFailures > 0 || e.Breaker.ConsecutiveFailures > 0 || e.DeadLetters > 0 || e.Pending > 0
}

// severity orders the endpoints that need attention, worst first.
func severity(e endpoint) int {
	switch {
	case e.Disabled:
		return 5
	case e.Breaker.State == "open":
		return 4
	case e.Breaker.State == "half_open", e.HeldUntil != nil:
		return 3
	case e.ConsecutiveFailures > 0 || e.Breaker.ConsecutiveFailures > 0:
		return 2
	}
	return 1
}

func sortAttention(eps []endpoint) {
	sort.SliceStable(eps, func(i, j int) bool {
		si, sj := severity(eps[i]), severity(eps[j])
		if si != sj {
			return si > sj
		}
		return eps[i].DeadLetters+eps[i].Pending > eps[j].DeadLetters+eps[j].Pending
	})
}

type overviewData struct {
	Summary       summary
	Attention     []endpoint
	AttentionMore bool
	AttentionAt   time.Time // when the snapshot was taken
	// AttentionPending: the first snapshot is still being taken; the page
	// reloads itself.
	AttentionPending bool
	All              []endpoint
	Next             string
}

// overview is /console/: the summary's figures, the endpoints that need
// attention (worst first), then every endpoint, a page at a time.
func (c *Console) overview(w http.ResponseWriter, r *http.Request, p *page) {
	ctx := r.Context()
	p.Title = "Overview"
	var d overviewData
	if _, err := c.api.call(ctx, http.MethodGet, "/api/v1/summary", nil, &d.Summary); err != nil {
		c.fail(w, p, err)
		return
	}
	snap := c.att.get(ctx)
	if snap.err != nil {
		c.fail(w, p, snap.err)
		return
	}
	var next int
	d.Attention, next = snap.page(0)
	d.AttentionMore, d.AttentionAt, d.AttentionPending = next > 0 || snap.more, snap.at, snap.pending
	if snap.pending {
		p.Refresh = 2
	}
	var all endpointPage
	q := url.Values{"limit": {strconv.Itoa(pageSize)}, "after": {r.URL.Query().Get("after")}}
	if _, err := c.api.call(ctx, http.MethodGet, "/api/v1/endpoints?"+q.Encode(), nil, &all); err != nil {
		c.fail(w, p, err)
		return
	}
	d.All, d.Next = all.Endpoints, all.Next
	p.Data = d
	c.render(w, http.StatusOK, "overview", p)
}

type endpointsData struct {
	Q, Tenant, After string
	Attention        string // "1": only those that need attention
	Endpoints        []endpoint
	Next             string
	NextFrom         string     // the attention listing's next offset
	SnapshotAt       time.Time  // when the attention listing's snapshot was taken
	Form             url.Values // the create form, filled in again after an error
}

// endpoints is /console/endpoints: search by id prefix and tenant, only
// those that need attention, paged on the server (?after=), and the form
// that creates one.
func (c *Console) endpoints(w http.ResponseWriter, r *http.Request, p *page) {
	c.renderEndpoints(w, r, p, http.StatusOK, nil)
}

func (c *Console) renderEndpoints(w http.ResponseWriter, r *http.Request, p *page, status int, form url.Values) {
	q := r.URL.Query()
	d := endpointsData{Q: strings.TrimSpace(q.Get("q")), Tenant: q.Get("tenant"), After: q.Get("after"), Form: form}
	if q.Get("attention") != "" {
		d.Attention = "1"
	}
	if d.Form == nil {
		d.Form = url.Values{}
	}
	p.Title = "Endpoints"
	if d.Attention != "" && d.Q == "" && d.Tenant == "" {
		// Every endpoint that needs attention, worst first, from the
		// overview's snapshot.
		snap := c.att.get(r.Context())
		if snap.err != nil {
			c.fail(w, p, snap.err)
			return
		}
		if snap.pending {
			p.Refresh = 2
			p.Flash = "Looking through every endpoint for those that need attention; this page reloads in a moment."
		}
		var next int
		d.Endpoints, next = snap.page(offsetOf(q))
		d.SnapshotAt = snap.at
		if next > 0 {
			d.NextFrom = strconv.Itoa(next)
		}
		p.Data = d
		c.render(w, status, "endpoints", p)
		return
	}
	eps, next, err := c.searchEndpoints(r, d)
	if err != nil {
		c.fail(w, p, err)
		return
	}
	d.Endpoints, d.Next = eps, next
	p.Data = d
	c.render(w, status, "endpoints", p)
}

// searchEndpoints returns a page of the endpoints whose id starts with
// d.Q, of d.Tenant, after d.After. Ids are listed in order, so those with a
// prefix are one run: the listing starts just before the prefix and stops
// at the first id without it.
func (c *Console) searchEndpoints(r *http.Request, d endpointsData) ([]endpoint, string, error) {
	after := d.After
	if after == "" && d.Q != "" {
		after = before(d.Q)
	}
	v := url.Values{"limit": {strconv.Itoa(pageSize)}}
	if after != "" {
		v.Set("after", after)
	}
	if d.Tenant != "" {
		v.Set("tenant", d.Tenant)
	}
	if d.Attention != "" {
		v.Set("attention", "true")
	}
	var pg endpointPage
	if _, err := c.api.call(r.Context(), http.MethodGet, "/api/v1/endpoints?"+v.Encode(), nil, &pg); err != nil {
		return nil, "", err
	}
	out := pg.Endpoints[:0]
	for _, e := range pg.Endpoints {
		if !strings.HasPrefix(e.ID, d.Q) {
			return out, "", nil
		}
		if d.Attention != "" && !needsAttention(e) {
			continue
		}
		out = append(out, e)
	}
	return out, pg.Next, nil
}

// before returns a string that sorts just before every id starting with
// prefix and after every other id that sorts before it: ids are
// [a-z0-9_-], all below '~'.
func before(prefix string) string {
	last := prefix[len(prefix)-1]
	if last == 0 {
		return prefix[:len(prefix)-1]
	}
	return prefix[:len(prefix)-1] + string([]byte{last - 1}) + "~"
}
