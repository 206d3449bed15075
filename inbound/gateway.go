package inbound

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/config"
)

// maxID bounds a provider's event id as stored; a longer one (or one with
// control characters) is replaced by "sha256:" and its hash.
const maxID = 200

// Gateway is the inbound gateway's HTTP handler: POST /in/<source>. Create
// it with [New]; it is safe for concurrent use and owns no goroutine.
type Gateway struct {
	sources map[string]*source
	order   []string // source ids in configuration order
	store   Store
	maxBody int
	log     *slog.Logger
	now     func() time.Time
	bufs    sync.Pool // of *bytes.Buffer
	// budget bounds the bytes of bodies held at once (read before they can
	// be verified, then stored); inUse is what requests hold of it.
	budget int64
	inUse  atomic.Int64
}

// Body budget: at most this many maximal bodies, and at most maxBudget
// bytes (but always one maximal body), are held at once; past it a
// request is answered 503 with Retry-After at once.
const (
	budgetBodies = 64
	maxBudget    = 256 << 20
)

// WithBodyBudget bounds the bytes of request bodies held at once (default
// 64 × max_body_bytes, at most 256 MiB, at least one body).
func WithBodyBudget(n int64) Option { return func(g *Gateway) { g.budget = n } }

// source is one configured source with its verifier and counters.
type source struct {
	id       string
	verifier verifier
	counters [numOutcomes]prometheus.Counter
	counts   [numOutcomes]atomic.Int64
}

// Option configures a Gateway.
type Option func(*Gateway)

// WithClock replaces time.Now (tests of the timestamp window).
func WithClock(now func() time.Time) Option { return func(g *Gateway) { g.now = now } }

// WithLogger sets the logger (default: discard). Bodies, secrets and
// signatures are never logged.
func WithLogger(l *slog.Logger) Option { return func(g *Gateway) { g.log = l } }

// New returns the gateway for cfg's sources (validated by config), storing
// through store and counting in m (nil: counted, not registered).
func New(cfg config.Inbound, store Store, m *Metrics, opts ...Option) (*Gateway, error) {
	if m == nil {
		m = NewMetrics(nil)
	}
	g := &Gateway{
		sources: make(map[string]*source, len(cfg.Sources)),
		store:   store,
		maxBody: cfg.MaxBodyBytes,
		log:     slog.New(slog.DiscardHandler),
		now:     time.Now,
	}
	if g.maxBody <= 0 {
		g.maxBody = config.DefaultInboundMaxBody
	}
	g.bufs.New = func() any { return new(bytes.Buffer) }
	g.budget = max(int64(g.maxBody), min(budgetBodies*int64(g.maxBody), maxBudget))
	for _, o := range opts {
		o(g)
	}
	for i, sc := range cfg.Sources {
		v, err := newVerifier(sc)
		if err != nil {
			return nil, fmt.Errorf("inbound.sources[%d]: %w", i, err)
		}
		s := &source{id: sc.ID, verifier: v}
		for o := range numOutcomes {
			s.counters[o] = m.requests.WithLabelValues(sc.ID, o.String())
		}
		g.sources[sc.ID] = s
		g.order = append(g.order, sc.ID)
	}
	return g, nil
}

// Counts are one source's requests since the gateway started.
type Counts struct {
	Accepted, Duplicates, SignatureFailures, WindowRejections, TooLarge, Unavailable int64
}

// Counts returns every source's counts, by source id.
func (g *Gateway) Counts() map[string]Counts {
	out := make(map[string]Counts, len(g.sources))
	for _, id := range g.order {
		s := g.sources[id]
		out[id] = Counts{
			Accepted:          s.counts[Accepted].Load(),
			Duplicates:        s.counts[Duplicate].Load(),
			SignatureFailures: s.counts[MissingSignature].Load() + s.counts[InvalidSignature].Load(),
			WindowRejections:  s.counts[OutsideWindow].Load(),
			TooLarge:          s.counts[TooLarge].Load(),
			Unavailable:       s.counts[Unavailable].Load(),
		}
	}
	return out
}

func (s *source) count(o Outcome) {
	s.counters[o].Inc()
	s.counts[o].Add(1)
}

// Prefix is the path under which sources are served: /in/<source>.
const Prefix = "/in/"

// ServeHTTP answers POST /in/<source>.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := cutSource(r.URL.Path)
	if !ok {
		answer(w, http.StatusNotFound, "unknown path: sources are at POST "+Prefix+"<source>")
		return
	}
	s := g.sources[id]
	if s == nil {
		answer(w, http.StatusNotFound, "unknown source")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, "method not allowed: use POST")
		return
	}
	if !s.verifier.present(r.Header) {
		s.count(MissingSignature)
		answer(w, http.StatusUnauthorized, ErrMissingSignature.Error())
		return
	}
	if r.ContentLength > int64(g.maxBody) {
		s.count(TooLarge)
		answer(w, http.StatusRequestEntityTooLarge, g.tooLarge())
		return
	}
	// Bodies are read before they can be verified: bound what unverified
	// senders can make the process hold.
	need := int64(g.maxBody)
	if r.ContentLength >= 0 {
		need = r.ContentLength
	}
	if g.inUse.Add(need) > g.budget {
		g.inUse.Add(-need)
		s.count(Unavailable)
		w.Header().Set("Retry-After", "1")
		answer(w, http.StatusServiceUnavailable, "too many requests in progress; retry later")
		return
	}
	defer g.inUse.Add(-need)
	buf := g.bufs.Get().(*bytes.Buffer)
	defer g.putBuf(buf)
	buf.Reset()
	n, err := buf.ReadFrom(io.LimitReader(r.Body, int64(g.maxBody)+1))
	switch {
	case n > int64(g.maxBody):
		s.count(TooLarge)
		answer(w, http.StatusRequestEntityTooLarge, g.tooLarge())
		return
	case err != nil:
		answer(w, http.StatusBadRequest, "could not read the body")
		return
	}
	g.accept(w, r, s, buf.Bytes())
}

// accept verifies body and stores it.
func (g *Gateway) accept(w http.ResponseWriter, r *http.Request, s *source, body []byte) {
	now := g.now()
	m, err := s.verifier.verify(r.Header, body, now)
	switch {
	case errors.Is(err, ErrOutsideWindow):
		s.count(OutsideWindow)
		answer(w, http.StatusBadRequest, ErrOutsideWindow.Error())
		return
	case err != nil:
		s.count(InvalidSignature)
		answer(w, http.StatusUnauthorized, ErrInvalidSignature.Error())
		return
	}
	ev := Event{
		Source: s.id, ID: eventID(m.id, body), Type: m.typ,
		ContentType: r.Header.Get("Content-Type"), ReceivedAt: now, Body: body,
	}
	if m.unsignedID {
		// github, shopify, hmac sign the body only: a replay under a new
		// delivery id is the same body.
		ev.DedupeID = eventID("", body)
	}
	// Not cancelled when the provider hangs up: a store half done would
	// only be repeated by its retry.
	st, err := g.store.Store(context.WithoutCancel(r.Context()), ev)
	if err != nil {
		s.count(Unavailable)
		g.log.Warn("inbound event not stored; answered 503", "source", s.id, "err", err)
		answer(w, http.StatusServiceUnavailable, "cannot store the event now; retry later")
		return
	}
	if st.Duplicate {
		s.count(Duplicate)
		writeStatus(w, `{"status":"duplicate"}`)
		return
	}
	s.count(Accepted)
	writeStatus(w, `{"status":"accepted"}`)
}

func (g *Gateway) tooLarge() string {
	return "body larger than " + strconv.Itoa(g.maxBody) + " bytes"
}

// putBuf returns a body buffer to the pool unless it grew far past the
// usual size, so that one large body does not pin memory.
func (g *Gateway) putBuf(b *bytes.Buffer) {
	if b.Cap() <= 64<<10 {
		g.bufs.Put(b)
	}
}

// cutSource returns the source id of a path /in/<source>.
func cutSource(path string) (string, bool) {
	if len(path) <= len(Prefix) || path[:len(Prefix)] != Prefix {
		return "", false
	}
	id := path[len(Prefix):]
	for i := range len(id) {
		if id[i] == '/' {
			return "", false
		}
	}
	return id, true
}

// eventID is the id an event is stored and deduplicated under: the
// provider's id when it is at most maxID printable bytes; "sha256:" and the
// hash of a longer or unprintable one; "sha256:" and the hash of the body
// when the provider gives none (so an identical body resent is a duplicate).
func eventID(id string, body []byte) string {
	if id == "" {
		sum := sha256.Sum256(body)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	if len(id) > maxID || !printable(id) {
		sum := sha256.Sum256([]byte(id))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return id
}

func printable(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// answer writes a refusal: {"error": reason}.
func answer(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, `{"error":`+strconv.Quote(reason)+"}\n")
}

func writeStatus(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, body+"\n")
}
