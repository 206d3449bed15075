package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// Options configure a Console.
type Options struct {
	// API is the admin API's handler, called in process.
	API http.Handler
	// Token is admin.token: the console asks for it at login and the
	// portal sessions route requires it. Empty: the console is open (the
	// admin listener is then a loopback address).
	Token string
	// SecretKey is security.secret_key (32 bytes); sessions are signed
	// with keys derived from it.
	SecretKey []byte
	// FrameAncestors is portal.frame_ancestors; empty means 'none'.
	FrameAncestors []string
	// PortalAddr is the address portal.listen listens on; empty: the
	// portal is served on the admin listener. Portal links point there.
	PortalAddr string
	// HideResponses reports whether the portal must not show the response
	// excerpts of deliveries to an endpoint URL: where deliveries may reach
	// private or loopback addresses, an excerpt may be an internal
	// service's error page. Nil shows them.
	HideResponses func(endpointURL string) bool
	// AllowTransforms is portal.allow_transforms: portal sessions may set
	// their endpoints' transform. They may always set a filter.
	AllowTransforms bool
	// Destinations is portal.destinations: the destination types portal
	// sessions may choose besides webhook. Empty: webhook only.
	Destinations []string
	// Log receives render and API errors; nil discards them.
	Log *slog.Logger
	// Now is the clock of sessions; nil is time.Now.
	Now func() time.Time
}

// Session lifetimes.
const (
	consoleSessionTTL = 12 * time.Hour
	defaultPortalTTL  = time.Hour
	maxPortalTTL      = 7 * 24 * time.Hour
	consoleCookie     = "hookjet_console"
)

// Console holds the console's and the portal's handlers.
type Console struct {
	api     apiClient
	token   string
	cookies signer // console sessions
	portal  signer // portal sessions
	cspC    string
	cspP    string
	tmpl    templates
	static  http.Handler
	log     *slog.Logger
	now     func() time.Time
	logins  *loginLimiter // failed sign-ins per client address (console/limiter.go)
	att     *attention    // the overview's snapshot (console/attention.go)
	o       Options
}

// New returns a Console, or an error when the key is missing or a template
// does not parse.
func New(o Options) (*Console, error) {
	if len(o.SecretKey) < 16 {
		return nil, errors.New("console: a secret key (security.secret_key) is required to sign sessions")
	}
	if o.API == nil {
		return nil, errors.New("console: the admin API handler is required")
	}
	t, err := loadTemplates()
	if err != nil {
		return nil, err
	}
	c := &Console{
		api:   apiClient{h: o.API, token: o.Token},
		token: o.Token,
		// Changing admin.token ends every console session.
		cookies: signer{key: deriveKey(o.SecretKey, "hookjet console session v1\x00"+o.Token)},
		portal:  signer{key: deriveKey(o.SecretKey, "hookjet portal session v1")},
		tmpl:    t,
		static:  staticFiles(),
		log:     o.Log,
		now:     o.Now,
		logins:  newLoginLimiter(),
		o:       o,
	}
	c.att = newAttention(c.api)
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	const common = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'"
	c.cspC = common + "; frame-ancestors 'none'"
	fa := "'none'"
	if len(o.FrameAncestors) > 0 {
		fa = strings.Join(o.FrameAncestors, " ")
	}
	c.cspP = common + "; frame-ancestors " + fa
	return c, nil
}

// Close stops the background work of the console (a refresh of the
// overview's snapshot) and waits for it. Stop serving first.
func (c *Console) Close() { c.att.Close() }

// AdminHandler is the admin listener's handler: the console, the portal
// (unless it has a listener of its own), POST /api/v1/portal/sessions, and
// the admin API for every other route.
func (c *Console) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/console/", c.consoleRoutes())
	if c.o.PortalAddr == "" {
		mux.Handle("/portal/", c.portalRoutes())
	}
	mux.HandleFunc("POST /api/v1/portal/sessions", c.createPortalSession)
	mux.Handle("/", c.o.API)
	return mux
}

// PortalHandler serves the portal alone, for portal.listen: /portal/ and
// its static files, nothing of the admin API.
func (c *Console) PortalHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/portal/", c.portalRoutes())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			http.Redirect(w, r, "/portal/", http.StatusSeeOther)
			return
		}
		c.headers(w, c.cspP)
		http.NotFound(w, r)
	})
	return mux
}

// headers sets the security headers of every answer.
func (c *Console) headers(w http.ResponseWriter, csp string) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would make Chromium send "Origin: null" with forms
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if csp == c.cspC || len(c.o.FrameAncestors) == 0 {
		h.Set("X-Frame-Options", "DENY")
	}
}

// sameOrigin reports whether a state-changing request comes from a page
// of this origin: Sec-Fetch-Site, when the browser sends it, must be
// same-origin (or none: typed by the user), and Origin, when present, must
// name this host.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if origin == "null" {
		return false
	}
	_, host, ok := strings.Cut(origin, "://")
	return ok && strings.EqualFold(host, r.Host)
}

// tokenOK compares a presented admin token with admin.token.
func (c *Console) tokenOK(got string) bool {
	return c.token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(c.token)) == 1
}

// bearerOK checks the Authorization header as the admin API does.
func (c *Console) bearerOK(r *http.Request) bool {
	if c.token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && c.tokenOK(got)
}

// newPage starts the page of a request.
func (c *Console) newPage(r *http.Request, title string) *page {
	p := &page{Title: title, start: startOf(r.Context())}
	if p.start.IsZero() {
		p.start = time.Now()
	}
	return p
}

type startKey struct{}

// timed records when the request arrived, for Server-Timing.
func timed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), startKey{}, time.Now())))
	})
}

func startOf(ctx context.Context) time.Time {
	t, _ := ctx.Value(startKey{}).(time.Time)
	return t
}

// portalBase is the scheme and host portal links point to.
func (c *Console) portalBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil && c.o.PortalAddr == "" {
		scheme = "https"
	}
	if c.o.PortalAddr == "" {
		return scheme + "://" + r.Host
	}
	host, port, err := net.SplitHostPort(c.o.PortalAddr)
	if err != nil {
		return scheme + "://" + c.o.PortalAddr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
