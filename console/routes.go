package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// handler is a page or an action of a signed-in session.
type handler func(w http.ResponseWriter, r *http.Request, p *page)

// consoleRoutes serves /console/.
func (c *Console) consoleRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", c.static))
	mux.HandleFunc("GET /console/login", c.loginForm)
	mux.HandleFunc("POST /console/login", c.login)
	mux.Handle("POST /console/logout", c.operator(c.logout))
	mux.Handle("GET /console/{$}", c.operator(c.overview))
	mux.Handle("GET /console/endpoints", c.operator(c.endpoints))
	mux.Handle("POST /console/endpoints", c.operator(c.createEndpoint))
	mux.Handle("GET /console/endpoints/{id}", c.operator(c.endpointPage))
	mux.Handle("POST /console/endpoints/{id}/{action}", c.operator(c.endpointAction))
	mux.Handle("GET /console/events", c.operator(c.eventsPage))
	mux.Handle("GET /console/events/{id}", c.operator(c.eventPage))
	mux.Handle("GET /console/dlq", c.operator(c.dlqPage))
	mux.Handle("GET /console/event-types", c.operator(c.eventTypesPage)) // console/eventtypes.go
	mux.Handle("POST /console/dlq/replay", c.operator(c.dlqReplay))
	mux.Handle("POST /console/dlq/discard", c.operator(c.dlqDiscard))
	mux.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		p := c.newPage(r, "Not found")
		p.Area, p.Static = "console", "/console/static"
		p.Error = "There is no page " + r.Method + " " + r.URL.Path + "."
		c.render(w, http.StatusNotFound, "error", p)
	})
	return timed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.headers(w, c.cspC)
		c.att.warm()
		mux.ServeHTTP(w, r)
	}))
}

// operator runs h for a console session: with admin.token one that logged
// in, without one a session the console starts itself (for the CSRF
// token). A POST must carry the session's CSRF token and come from this
// origin.
func (c *Console) operator(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := c.newPage(r, "")
		p.Area, p.Base, p.Static, p.Open = "console", "/console", "/console/static", c.token == ""
		sess, err := c.consoleSession(r)
		if err != nil {
			switch {
			case r.Method != http.MethodGet:
				p.Error = "Your session has expired or is not valid: reload the page and try again."
				c.render(w, http.StatusForbidden, "error", p)
				return
			case c.token != "":
				http.Redirect(w, r, "/console/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			sess = c.startConsoleSession(w, r)
		}
		p.CSRF = c.cookies.csrf(sess)
		if r.Method != http.MethodGet && !c.formOK(w, r, c.cookies, sess) {
			p.Error = "This form did not come from this console's page (CSRF check): reload the page and try again."
			c.render(w, http.StatusForbidden, "error", p)
			return
		}
		p.Flash = flash(r.URL.Query())
		h(w, r, p)
	})
}

// formOK parses a POST's form (at most 64 KiB) and checks its origin and
// CSRF token.
func (c *Console) formOK(w http.ResponseWriter, r *http.Request, s signer, sess session) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return false
	}
	return sameOrigin(r) && s.checkCSRF(sess, r.PostForm.Get("csrf"))
}

func (c *Console) consoleSession(r *http.Request) (session, error) {
	ck, err := r.Cookie(consoleCookie)
	if err != nil {
		return session{}, errBadSession
	}
	return c.cookies.check(ck.Value, kindConsole, c.now())
}

// startConsoleSession sets a new session cookie and returns the session.
func (c *Console) startConsoleSession(w http.ResponseWriter, r *http.Request) session {
	exp := c.now().Add(consoleSessionTTL)
	token := c.cookies.issue(session{Kind: kindConsole, Expires: exp.Unix()})
	sess, _ := c.cookies.check(token, kindConsole, c.now()) // just signed
	http.SetCookie(w, &http.Cookie{
		Name: consoleCookie, Value: token, Path: "/console/", Expires: exp, MaxAge: int(consoleSessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	return sess
}

func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	if c.token == "" {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	p := c.newPage(r, "Sign in")
	p.Area, p.Static = "console", "/console/static"
	p.Data = map[string]string{"Next": safeNext(r.URL.Query().Get("next"))}
	c.render(w, http.StatusOK, "login", p)
}

// login exchanges admin.token for a session cookie.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	p := c.newPage(r, "Sign in")
	p.Area, p.Static = "console", "/console/static"
	p.Data = map[string]string{"Next": "/console/"}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil || !sameOrigin(r) {
		p.Error = "The sign-in form did not come from this console."
		c.render(w, http.StatusForbidden, "login", p)
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	p.Data = map[string]string{"Next": next}
	if c.token == "" {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	// Failed sign-ins spend the client address's tokens; once they are
	// gone no token from that address is compared until they refill.
	if c.logins.blocked(r.RemoteAddr, c.now()) {
		p.Error = "Too many failed sign-ins: wait a few seconds."
		c.render(w, http.StatusTooManyRequests, "login", p)
		return
	}
	if !c.tokenOK(r.PostForm.Get("token")) {
		c.logins.failed(r.RemoteAddr, c.now())
		p.Error = "That is not the admin token."
		c.render(w, http.StatusUnauthorized, "login", p)
		return
	}
	c.startConsoleSession(w, r)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, _ *page) {
	http.SetCookie(w, &http.Cookie{Name: consoleCookie, Value: "", Path: "/console/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	target := "/console/login"
	if c.token == "" {
		target = "/console/"
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// safeNext keeps a redirect after login on the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/console/") || strings.ContainsAny(next, "\\\r\n") || strings.HasPrefix(next, "//") {
		return "/console/"
	}
	return next
}

// flashes are the fixed messages an action's redirect asks for (?done=);
// nothing of the query is shown as it is.
var flashes = map[string]string{
	"enabled":     "Endpoint enabled.",
	"disabled":    "Endpoint disabled: nothing is sent to it until it is enabled again.",
	"reset":       "Breaker closed: waiting deliveries go now.",
	"test":        "Test event sent; its attempt appears below once it is made.",
	"updated":     "Endpoint saved.",
	"deleted":     "Endpoint deleted; its dead letters stay.",
	"removed":     "Endpoint deleted: nothing more is sent to it.",
	"replayed":    "Dead letters replayed.",
	"discarded":   "Dead letters discarded.",
	"redelivered": "Stored events queued for redelivery.",
}

func flash(q url.Values) string {
	return flashes[q.Get("done")]
}

// fail shows an error of the admin API on the error page with its status.
func (c *Console) fail(w http.ResponseWriter, p *page, err error) {
	status, msg := http.StatusBadGateway, err.Error()
	var ae *apiError
	switch {
	case missingRoute(err):
		status, msg = http.StatusNotImplemented, "This hookjet does not have that feature yet."
	case errors.As(err, &ae):
		status = ae.Status
	default:
		c.log.Error("console: admin API", "err", err)
	}
	if p.Title == "" {
		p.Title = http.StatusText(status)
	}
	p.Error = msg
	c.render(w, status, "error", p)
}
