package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits enforced by Validate.
const (
	maxReplicas    = 5
	maxConcurrency = 100000
	// maxPayloadBytes keeps an event well inside one fan-out pull (32 MiB,
	// dispatch's fanoutBytes): one larger would never be handed out.
	maxPayloadBytes   = 16 << 20
	maxEndpointsLimit = 1000000
	maxIDLen          = 64
	minTimeout        = time.Millisecond
	maxTimeout        = 10 * time.Minute
	maxInFlight       = 10000
	maxBacklog        = 10_000_000
	maxRPS            = 1e6
	maxAttempts       = 1000
	maxThreshold      = 10000
)

// problems collects FieldErrors.
type problems []*FieldError

func (p *problems) add(key string, format string, args ...any) {
	*p = append(*p, &FieldError{Key: key, Err: fmt.Errorf(format, args...)})
}

// Validate checks every key and returns an errors.Join of a [*FieldError] per
// problem ("endpoints[1].url: scheme must be http or https"), or nil. Every
// error wraps [ErrInvalid]. Validate reads no files and does not change c.
func (c *Config) Validate() error {
	p := c.validate()
	errs := make([]error, len(p))
	for i, fe := range p {
		errs[i] = fe
	}
	return errors.Join(errs...)
}

// validate returns every problem of c.
func (c *Config) validate() problems {
	var p problems
	if c.DataDir == "" {
		p.add("data_dir", "must not be empty")
	}
	c.validateNATS(&p)
	c.validateStreams(&p)
	if c.Worker.Concurrency < 1 || c.Worker.Concurrency > maxConcurrency {
		p.add("worker.concurrency", "must be between 1 and %d, got %d", maxConcurrency, c.Worker.Concurrency)
	}
	if c.Worker.ShutdownGrace <= 0 {
		p.add("worker.shutdown_grace", "must be positive, got %s", c.Worker.ShutdownGrace)
	}
	if c.Dedupe.TTL <= 0 {
		p.add("dedupe.ttl", "must be positive, got %s", c.Dedupe.TTL)
	}
	if err := checkHostPort(c.Admin.Listen); err != nil {
		p.add("admin.listen", "%w", err)
	} else if c.Admin.Token.IsZero() && !isLoopback(c.Admin.Listen) {
		p.add("admin.token", "required when admin.listen (%s) is not a loopback address", c.Admin.Listen)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		p.add("log.format", "must be text or json, got %q", c.Log.Format)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		p.add("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	c.validateDeliveryLog(&p)
	c.validateSecurity(&p)
	if n := c.Metrics.MaxEndpointSeries; n < 1 || n > 100000 {
		p.add("metrics.max_endpoint_series", "must be between 1 and 100000, got %d", n)
	}
	c.validateOutbox(&p)
	c.validateInbound(&p)
	c.validatePortal(&p)
	c.validatePublish(&p)
	c.validateCatalog(&p)

	var defaults problems
	validateSettings(&defaults, "defaults", c.Defaults)
	p = append(p, defaults...)
	c.validateEndpoints(&p, defaults)
	return p
}

func (c *Config) validateNATS(p *problems) {
	n := c.NATS
	if n.URL != "" {
		for i, u := range strings.Split(n.URL, ",") {
			if err := checkNATSURL(strings.TrimSpace(u)); err != nil {
				p.add("nats.url", "entry %d: %w", i+1, err)
			}
		}
	}
	if err := checkHostPort(n.Listen); err != nil {
		p.add("nats.listen", "%w", err)
	} else if n.URL == "" && !isLoopback(n.Listen) && n.Token.IsZero() && (n.User == "" || n.Password.IsZero()) {
		p.add("nats.listen", "the embedded server on a non-loopback address (%s) requires nats.token or nats.user and nats.password", n.Listen)
	}
	if n.User != "" && n.Password.IsZero() {
		p.add("nats.password", "required when nats.user is set")
	}
	if n.User == "" && !n.Password.IsZero() {
		p.add("nats.user", "required when nats.password is set")
	}
	if !n.Token.IsZero() && n.User != "" {
		p.add("nats.token", "cannot be combined with nats.user")
	}
	if n.Creds != "" && n.NKey != "" {
		p.add("nats.nkey", "cannot be combined with nats.creds")
	}
	if n.URL == "" {
		if n.Creds != "" {
			p.add("nats.creds", "applies only with nats.url; the embedded server uses nats.user/password or nats.token")
		}
		if n.NKey != "" {
			p.add("nats.nkey", "applies only with nats.url; the embedded server uses nats.user/password or nats.token")
		}
	}
	if (n.TLSCert == "") != (n.TLSKey == "") {
		p.add("nats.tls_key", "nats.tls_cert and nats.tls_key must be set together")
	}
	if n.Sync != SyncAlways {
		if d, err := time.ParseDuration(n.Sync); err != nil || d <= 0 {
			p.add("nats.sync", "%q is neither %q nor a positive duration such as 2m", n.Sync, SyncAlways)
		}
	}
}

// checkNATSURL checks one nats:// or tls:// server URL.
func checkNATSURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return urlError(err)
	}
	if u.Scheme != "nats" && u.Scheme != "tls" {
		return errors.New("scheme must be nats or tls")
	}
	if u.Hostname() == "" {
		return errors.New("missing host")
	}
	return nil
}

func (c *Config) validateStreams(p *problems) {
	s := c.Streams
	if s.Replicas < 1 || s.Replicas > maxReplicas {
		p.add("streams.replicas", "must be between 1 and %d, got %d", maxReplicas, s.Replicas)
	}
	positive := []struct {
		key string
		d   time.Duration
	}{
		{"streams.duplicate_window", s.DuplicateWindow},
		{"streams.max_age", s.MaxAge},
		{"streams.dlq_max_age", s.DLQMaxAge},
	}
	for _, x := range positive {
		if x.d <= 0 {
			p.add(x.key, "must be positive, got %s", x.d)
		}
	}
	if s.DuplicateWindow > 0 && s.MaxAge > 0 && s.DuplicateWindow > s.MaxAge {
		p.add("streams.duplicate_window", "must not exceed streams.max_age (%s), got %s", s.MaxAge, s.DuplicateWindow)
	}
	if s.MaxBytes <= 0 {
		p.add("streams.max_bytes", "must be positive, got %d", s.MaxBytes)
	}
	if s.DLQMaxBytes <= 0 {
		p.add("streams.dlq_max_bytes", "must be positive, got %d", s.DLQMaxBytes)
	}
	if s.TasksMaxBytes < 1<<20 {
		p.add("streams.tasks_max_bytes", "must be at least 1 MiB, got %d", s.TasksMaxBytes)
	}
}

func (c *Config) validateSecurity(p *problems) {
	s := c.Security
	for i, cidr := range s.AllowCIDRs {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			p.add(fmt.Sprintf("security.allow_cidrs[%d]", i), "%q is not a CIDR prefix such as 10.0.0.0/8", cidr)
		}
	}
	if s.MaxPayloadBytes < 1 || s.MaxPayloadBytes > maxPayloadBytes {
		p.add("security.max_payload_bytes", "must be between 1 and %d, got %d", maxPayloadBytes, s.MaxPayloadBytes)
	}
	if s.MaxEndpoints < 1 || s.MaxEndpoints > maxEndpointsLimit {
		p.add("security.max_endpoints", "must be between 1 and %d, got %d", maxEndpointsLimit, s.MaxEndpoints)
	}
	if !s.SecretKey.IsZero() {
		if _, err := DecodeSecretKey(s.SecretKey); err != nil {
			p.add("security.secret_key", "%w", err)
		}
	}
	if s.EgressProxy != "" {
		if s.EgressProxy == "none" {
			p.add("security.egress_proxy", `"none" is an endpoint's value: leave security.egress_proxy empty for no proxy`)
		} else if err := checkProxy(s.EgressProxy); err != nil {
			p.add("security.egress_proxy", "%w", err)
		}
	}
}

// validateSettings checks settings whose keys start with prefix ("defaults"
// or "endpoints[i]").
func validateSettings(p *problems, prefix string, s Settings) {
	key := func(k string) string { return child(prefix, k) }
	if s.Timeout < minTimeout || s.Timeout > maxTimeout {
		p.add(key("timeout"), "must be between %s and %s, got %s", minTimeout, maxTimeout, s.Timeout)
	}
	if s.MaxInFlight < 1 || s.MaxInFlight > maxInFlight {
		p.add(key("max_in_flight"), "must be between 1 and %d, got %d", maxInFlight, s.MaxInFlight)
	}
	if s.MaxBacklog < 1 || s.MaxBacklog > maxBacklog {
		p.add(key("max_backlog"), "must be between 1 and %d, got %d", maxBacklog, s.MaxBacklog)
	}
	if s.Ordering != OrderingNone && s.Ordering != OrderingKey {
		p.add(key("ordering"), "must be %s or %s, got %q", OrderingNone, OrderingKey, s.Ordering)
	}
	if s.OrderingOnDeadLetter != OnDeadLetterSkip && s.OrderingOnDeadLetter != OnDeadLetterHold {
		p.add(key("ordering_on_dead_letter"), "must be %s or %s, got %q", OnDeadLetterSkip, OnDeadLetterHold, s.OrderingOnDeadLetter)
	}
	if s.TransformTimeout < time.Millisecond || s.TransformTimeout > maxTransformTimeout {
		p.add(key("transform_timeout"), "must be between 1ms and %s, got %s", maxTransformTimeout, s.TransformTimeout)
	}
	if s.TransformMaxMemory < 1<<20 || s.TransformMaxMemory > 1<<30 {
		p.add(key("transform_max_memory"), "must be between 1MiB and 1GiB, got %d bytes", s.TransformMaxMemory)
	}
	r := s.RateLimit
	if !(r.RPS >= 0 && r.RPS <= maxRPS) { // also refuses NaN
		p.add(key("rate_limit.rps"), "must be between 0 (unlimited) and %g, got %g", float64(maxRPS), r.RPS)
	}
	switch {
	case r.Burst < 0:
		p.add(key("rate_limit.burst"), "must not be negative, got %d", r.Burst)
	case r.Burst == 0 && r.RPS > 0 && !math.IsInf(r.RPS, 1):
		p.add(key("rate_limit.burst"), "must be at least 1 when rate_limit.rps is set")
	}
	t := s.Retry
	if t.Base <= 0 {
		p.add(key("retry.base"), "must be positive, got %s", t.Base)
	}
	if t.Cap < t.Base {
		p.add(key("retry.cap"), "must be at least retry.base (%s), got %s", t.Base, t.Cap)
	}
	if t.MaxAttempts < 1 || t.MaxAttempts > maxAttempts {
		p.add(key("retry.max_attempts"), "must be between 1 and %d, got %d", maxAttempts, t.MaxAttempts)
	}
	if t.MaxAge <= 0 {
		p.add(key("retry.max_age"), "must be positive, got %s", t.MaxAge)
	}
	b := s.Breaker
	if b.FailureThreshold < 1 || b.FailureThreshold > maxThreshold {
		p.add(key("breaker.failure_threshold"), "must be between 1 and %d, got %d", maxThreshold, b.FailureThreshold)
	}
	if b.Cooldown <= 0 {
		p.add(key("breaker.cooldown"), "must be positive, got %s", b.Cooldown)
	}
	if b.MaxCooldown < b.Cooldown {
		p.add(key("breaker.max_cooldown"), "must be at least breaker.cooldown (%s), got %s", b.Cooldown, b.MaxCooldown)
	}
	if b.SlowP95 <= 0 {
		p.add(key("breaker.slow_p95"), "must be positive, got %s", b.SlowP95)
	}
}

// validateEndpoints checks the endpoints. A settings problem an endpoint
// merely inherits from defaults (already in defaultProblems) is not repeated
// for every endpoint.
func (c *Config) validateEndpoints(p *problems, defaultProblems problems) {
	if len(c.Endpoints) > c.Security.MaxEndpoints && c.Security.MaxEndpoints > 0 {
		p.add("endpoints", "%d endpoints exceed security.max_endpoints (%d)", len(c.Endpoints), c.Security.MaxEndpoints)
	}
	inherited := make(map[string]bool, len(defaultProblems))
	for _, fe := range defaultProblems {
		inherited[strings.TrimPrefix(fe.Error(), "defaults.")] = true
	}
	ids := make(map[string]int, len(c.Endpoints))
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		prefix := "endpoints[" + strconv.Itoa(i) + "]"
		key := func(k string) string { return prefix + "." + k }

		if err := checkID(e.ID); err != nil {
			p.add(key("id"), "%w", err)
		} else if j, dup := ids[e.ID]; dup {
			p.add(key("id"), "%q is already the id of endpoints[%d]", e.ID, j)
		} else {
			ids[e.ID] = i
		}
		validateEndpointFields(p, prefix, e, c.Security.HTTPSOnly)
		for _, fe := range c.Security.CheckCode(*e) {
			p.add(key(fe.Key), "%w", fe.Err)
		}
		if err := c.Portal.tenantDestination(e); err != nil {
			p.add(prefix+".destination.type", "%w", err)
		}

		var sp problems
		validateSettings(&sp, prefix, e.Settings)
		for _, fe := range sp {
			if !inherited[strings.TrimPrefix(fe.Error(), prefix+".")] {
				*p = append(*p, fe)
			}
		}
	}
}

// validateEndpointFields checks an endpoint's own fields but its id and
// settings: url, secrets, events and headers, with keys under prefix
// ("endpoints[i]", or "" for the admin API's JSON fields).
func validateEndpointFields(p *problems, prefix string, e *Endpoint, httpsOnly bool) {
	key := func(k string) string { return child(prefix, k) }
	if e.Destination.IsWebhook() {
		if err := checkEndpointURL(e.URL, httpsOnly); err != nil {
			p.add(key("url"), "%w", err)
		}
	} else if e.URL != "" {
		p.add(key("url"), "applies to webhook destinations only; a %s destination's address is under destination", e.Destination.Type)
	}
	validateDestination(p, prefix, &e.Destination)
	if len(e.Secrets) == 0 {
		p.add(key("secrets"), "at least one signing secret (whsec_...) is required")
	}
	for j, s := range e.Secrets {
		if _, err := DecodeSecret(s.Reveal()); err != nil {
			p.add(fmt.Sprintf("%s[%d]", key("secrets"), j), "%w", err)
		}
	}
	if e.Tenant != "" {
		if err := CheckTenant(e.Tenant); err != nil {
			p.add(key("tenant"), "%w", err)
		}
	}
	validateEvents(p, key("events"), e.Events)
	validateHeaders(p, key("headers"), e.Headers)
	validateAuth(p, key("auth"), key("headers"), e.Auth, e.Headers)
	if err := checkProxy(e.Proxy); err != nil {
		p.add(key("proxy"), "%w", err)
	}
}

// reservedIDs are ids no endpoint may take, in the config file or through
// the API, and what uses them.
var reservedIDs = map[string]string{
	OutboxDLQEndpoint: "rejected outbox rows",
	"_other":          "the metrics series shared by endpoints past metrics.max_endpoint_series",
}

// checkID checks an endpoint id: [a-z0-9_-]+, at most 64 bytes.
func checkID(id string) error {
	if id == "" {
		return errors.New("is required")
	}
	if what, ok := reservedIDs[id]; ok {
		return fmt.Errorf("%q is reserved for %s", id, what)
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("must be at most %d characters, got %d", maxIDLen, len(id))
	}
	for i := range len(id) {
		c := id[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return fmt.Errorf("%q may contain only a-z, 0-9, _ and -", id)
		}
	}
	return nil
}

// checkEndpointURL checks an endpoint URL. Errors do not quote the URL, which
// may carry credentials in its query.
func checkEndpointURL(s string, httpsOnly bool) error {
	if s == "" {
		return errors.New("is required")
	}
	u, err := url.Parse(s)
	if err != nil {
		return urlError(err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("scheme must be http or https")
	case httpsOnly && u.Scheme != "https":
		return errors.New("scheme must be https (security.https_only is set)")
	case u.User != nil:
		return errors.New("must not contain user info; use headers for credentials")
	case u.Opaque != "" || u.Hostname() == "":
		return errors.New("missing host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return errors.New("invalid port")
		}
	}
	return nil
}

// urlError returns the reason of a url.Parse error without the URL itself.
func urlError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return fmt.Errorf("invalid URL: %w", ue.Err)
	}
	return fmt.Errorf("invalid URL: %w", err)
}

// validateEvents checks an endpoint's event patterns and that none overlaps
// another (which JetStream refuses in one consumer).
func validateEvents(p *problems, key string, events []string) {
	if len(events) == 0 {
		p.add(key, "at least one pattern is required (\">\" subscribes to every event)")
		return
	}
	valid := make([]bool, len(events))
	for i, ev := range events {
		if err := validatePattern(ev); err != nil {
			p.add(fmt.Sprintf("%s[%d]", key, i), "%q: %w", ev, err)
			continue
		}
		valid[i] = true
		for j := range i {
			if valid[j] && (covers(events[j], ev) || covers(ev, events[j])) {
				p.add(fmt.Sprintf("%s[%d]", key, i), "%q overlaps %q", ev, events[j])
				break
			}
		}
	}
}

// reservedHeaders are set by hookjet or by the HTTP transport and cannot be
// configured per endpoint.
var reservedHeaders = map[string]bool{
	"webhook-id":         true,
	"webhook-timestamp":  true,
	"webhook-signature":  true,
	"content-type":       true,
	"content-length":     true,
	"host":               true,
	"user-agent":         true,
	"transfer-encoding":  true,
	"connection":         true,
	"te":                 true,
	"trailer":            true,
	"upgrade":            true,
	"keep-alive":         true,
	"proxy-connection":   true,
	"hookjet-event-type": true,
	"hookjet-tenant":     true,
}

// validateHeaders checks extra header names and values. Errors never contain
// a value.
func validateHeaders(p *problems, key string, headers map[string]Secret) {
	seen := make(map[string]string, len(headers))
	for _, name := range slices.Sorted(maps.Keys(headers)) { // a stable order of errors
		value := headers[name]
		hk := key + "." + name
		lower := strings.ToLower(name)
		switch {
		case !validHeaderName(name):
			p.add(hk, "%q is not a valid header name", name)
			continue
		case reservedHeaders[lower]:
			p.add(hk, "%s is set by hookjet and cannot be configured", name)
			continue
		}
		if other, dup := seen[lower]; dup {
			p.add(key, "%q and %q are the same header", other, name)
		}
		seen[lower] = name
		if strings.ContainsFunc(value.Reveal(), func(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }) {
			p.add(hk, "value must not contain CR, LF, NUL or other control characters")
		}
	}
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// checkHostPort checks a listen address host:port; the host may be empty
// (every interface) and the port 0 (any free port).
func checkHostPort(s string) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q has an invalid port", s)
	}
	return nil
}

// isLoopback reports whether listen address hostport binds to loopback only.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.IsLoopback()
}
