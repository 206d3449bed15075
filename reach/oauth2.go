package reach

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// maxEarly is the most a token is fetched again before it expires; a
// token of a short lifetime is fetched again a tenth of it before.
const maxEarly = 10 * time.Second

// Option configures [Open].
type Option func(*tokenSource)

// WithClock makes OAuth2 token expiry read now instead of time.Now: a
// test seam.
func WithClock(now func() time.Time) Option {
	return func(s *tokenSource) { s.now = now }
}

// Authorize sets the Authorization header of a request in h: basic and
// bearer credentials at once, an OAuth2 token from the cache or, when it
// is missing or about to expire, from the token endpoint (bounded by ctx).
// It returns the OAuth2 token it set ("" for other types), for
// [Credentials.Drop]. Its error is a [*TokenError].
func (c *Credentials) Authorize(ctx context.Context, h http.Header) (string, error) {
	switch {
	case c == nil:
	case c.header != nil:
		h["Authorization"] = c.header
	case c.token != nil:
		t, err := c.token.get(ctx)
		if err != nil {
			return "", err
		}
		h["Authorization"] = t.header
		return t.value, nil
	}
	return "", nil
}

// Drop forgets the OAuth2 token a receiver refused (it answered 401), so
// that the next [Credentials.Authorize] fetches another; a token other
// than the cached one (already replaced) is ignored.
func (c *Credentials) Drop(token string) {
	if c == nil || c.token == nil || token == "" {
		return
	}
	s := c.token
	s.mu.Lock()
	if s.tok != nil && s.tok.value == token {
		s.tok = nil
	}
	s.mu.Unlock()
}

// tokenSource holds an endpoint's OAuth2 token and fetches it once for
// every delivery that needs it.
type tokenSource struct {
	cfg    clientcredentials.Config
	client *http.Client
	now    func() time.Time

	mu       sync.Mutex
	tok      *token
	fetching chan struct{} // non-nil while a fetch runs; closed after it
	err      error         // the last fetch's error
}

// token is a fetched token.
type token struct {
	value     string
	header    []string // Authorization
	refreshAt time.Time
	expiry    time.Time // zero: none given
}

func newTokenSource(a Auth, client *http.Client, opts ...Option) *tokenSource {
	if client == nil {
		client = http.DefaultClient
	}
	s := &tokenSource{
		cfg: clientcredentials.Config{
			ClientID:     a.ClientID,
			ClientSecret: a.ClientSecret,
			TokenURL:     a.TokenURL,
			Scopes:       a.Scopes,
			// RFC 6749 2.3.1: every server supports HTTP basic; probing
			// for the other style would double each failed fetch.
			AuthStyle: oauth2.AuthStyleInHeader,
		},
		client: client,
		now:    time.Now,
	}
	if a.Audience != "" {
		s.cfg.EndpointParams = url.Values{"audience": {a.Audience}}
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// get returns a token that is not about to expire, fetching one when
// needed. While one fetch runs, other callers wait for it (or keep using
// the current token if it has not expired yet).
func (s *tokenSource) get(ctx context.Context) (*token, error) {
	for {
		s.mu.Lock()
		now := s.now()
		if t := s.tok; t != nil && now.Before(t.refreshAt) {
			s.mu.Unlock()
			return t, nil
		}
		if ch := s.fetching; ch != nil {
			if t := s.tok; t != nil && (t.expiry.IsZero() || now.Before(t.expiry)) {
				s.mu.Unlock()
				return t, nil // still valid while another caller renews it
			}
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, &TokenError{Err: ctx.Err()}
			}
			s.mu.Lock()
			t, err := s.tok, s.err
			s.mu.Unlock()
			switch {
			case t != nil:
				return t, nil
			case err != nil && !isContextErr(err):
				return nil, err
			}
			continue // the fetcher gave up with its own context: try ourselves
		}
		ch := make(chan struct{})
		s.fetching = ch
		s.mu.Unlock()

		t, err := s.fetch(ctx)

		s.mu.Lock()
		s.fetching, s.err = nil, err
		if err == nil {
			s.tok = t
		}
		s.mu.Unlock()
		close(ch)
		return t, err
	}
}

// isContextErr reports whether err is a fetch abandoned for its context.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// fetch asks the token endpoint for a token.
func (s *tokenSource) fetch(ctx context.Context) (*token, error) {
	rec := &recorder{rt: s.client.Transport}
	if rec.rt == nil {
		rec.rt = http.DefaultTransport
	}
	client := &http.Client{
		Transport: rec,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a 3xx is the token endpoint's answer
		},
	}
	start := time.Now() // the oauth2 package computes expiry with time.Now
	t, err := s.cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, client))
	if err != nil {
		return nil, tokenError(err, rec.error())
	}
	if t.AccessToken == "" || strings.ContainsAny(t.AccessToken, "\r\n") {
		return nil, &TokenError{Err: errNoToken}
	}
	typ := t.Type() // "Bearer" unless the token endpoint names another
	out := &token{value: t.AccessToken, header: []string{typ + " " + t.AccessToken}, refreshAt: s.now().Add(100 * 365 * 24 * time.Hour)}
	if !t.Expiry.IsZero() {
		life := t.Expiry.Sub(start)
		early := min(maxEarly, life/10)
		exp := s.now().Add(life)
		out.expiry, out.refreshAt = exp, exp.Add(-early)
	}
	return out, nil
}

// tokenError makes a [*TokenError] of what the oauth2 package returned;
// cause is the transport's own error (which the oauth2 package flattens),
// nil when the token endpoint answered.
func tokenError(err, cause error) error {
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && re.Response != nil {
		return &TokenError{
			Status:      re.Response.StatusCode,
			Code:        clip(re.ErrorCode),
			Description: clip(re.ErrorDescription),
		}
	}
	if cause != nil {
		return &TokenError{Err: cause}
	}
	return &TokenError{Err: errNoToken}
}

// clip bounds a text the token endpoint chose and keeps it on one line.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxDescription {
		s = s[:maxDescription] + "..."
	}
	return s
}

// recorder is a RoundTripper that keeps the error of the last round trip,
// which the oauth2 package would flatten into text.
type recorder struct {
	rt  http.RoundTripper
	mu  sync.Mutex
	err error
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
	return resp, err
}

func (r *recorder) error() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
