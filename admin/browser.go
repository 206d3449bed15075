package admin

import (
	"mime"
	"net"
	"net/http"
	"strings"
)

// OpenGuard protects the open admin listener (no admin.token, so bound to
// loopback) from what a web page in the operator's browser could forge.
// Any page can send a request to http://127.0.0.1:8089 (a "simple"
// cross-site POST needs no CORS preflight), and a page on a name the
// attacker rebinds to 127.0.0.1 (DNS rebinding) can even read the answers.
// OpenGuard refuses, with 403 or 415 and a JSON error naming the reason:
//
//   - a request whose Host is neither a loopback name (localhost,
//     127.0.0.1, [::1], any port) nor the host of listen (admin.listen):
//     a rebound name is never one of them;
//   - a state-changing request (POST, PUT, PATCH, DELETE) whose Origin is
//     not this host, or whose Sec-Fetch-Site is cross-site or same-site;
//   - a request with a body outside /console/ and /portal/ (the admin
//     API's JSON) without Content-Type: application/json, which a page
//     cannot set on a cross-site request without a preflight that hookjet
//     never grants.
//
// The CLI, curl with -H 'Content-Type: application/json' (or --json) and
// the console's own forms pass. With admin.token the guard is not needed:
// every API route needs the bearer token, which a page cannot read or
// send cross-site without a preflight, and the console's session cookie is
// host-only and SameSite=Strict, so a rebound name does not carry it. A
// token listener may also face any name (a load balancer, an internal
// DNS name), which a Host check would refuse.
func OpenGuard(listen string, next http.Handler) http.Handler {
	listenHost := hostOnly(listen)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := forged(r, listenHost); reason != "" {
			status := http.StatusForbidden
			if strings.HasPrefix(reason, "Content-Type") {
				status = http.StatusUnsupportedMediaType
			}
			writeError(w, status, reason)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// forged says why r may come from a web page rather than from the
// operator, or "" when it may not.
func forged(r *http.Request, listenHost string) string {
	if !loopbackHost(r.Host, listenHost) {
		return "Host " + quoteShort(r.Host) + " is not a loopback name or admin.listen: the admin API without admin.token answers only requests to localhost, 127.0.0.1 or [::1] (set admin.token to serve other names)"
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "cross-site", "same-site":
		return "Sec-Fetch-Site " + site + ": the admin API without admin.token refuses changes requested by another site's page"
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		_, host, ok := strings.Cut(origin, "://")
		if !ok || !strings.EqualFold(host, r.Host) {
			return "Origin " + quoteShort(origin) + " is not this host: the admin API without admin.token refuses changes requested by another site's page"
		}
	}
	if hasBody(r) && !strings.HasPrefix(r.URL.Path, "/console/") && !strings.HasPrefix(r.URL.Path, "/portal/") {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return "Content-Type must be application/json for a request body (got " + quoteShort(r.Header.Get("Content-Type")) + ")"
		}
	}
	return ""
}

// hasBody reports whether r carries a body: a positive Content-Length or
// one of unknown length (chunked).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

// loopbackHost reports whether the Host header host names this machine's
// loopback interface, or the host of admin.listen, with any port.
func loopbackHost(host, listenHost string) bool {
	h := hostOnly(host)
	if h == "" {
		return false
	}
	if strings.EqualFold(h, "localhost") || (listenHost != "" && strings.EqualFold(h, listenHost)) {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// hostOnly is the host of hostport without its port and brackets.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.Trim(h, "[]")
	}
	return strings.Trim(hostport, "[]")
}

// quoteShort quotes s for an error message, cut to 100 bytes.
func quoteShort(s string) string {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
