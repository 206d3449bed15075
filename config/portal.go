package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Portal configures the customer portal: pages a tenant opens through a
// signed link from POST /api/v1/portal/sessions (package console).
type Portal struct {
	// Listen is an address of its own for the portal (host:port), which
	// serves /portal/ and nothing of the admin API. Empty (the default)
	// serves the portal on admin.listen.
	Listen string `yaml:"listen"`
	// FrameAncestors are the CSP frame-ancestors sources allowed to embed
	// the portal in a frame: origins such as "https://app.example.com",
	// "https://*.example.com" or "'self'". Empty (the default) means
	// 'none': no page may frame it.
	FrameAncestors []string `yaml:"frame_ancestors"`
	// AllowPrivateNetworks lets the deliveries of endpoints with a tenant
	// (whoever created them: the portal, the API or the config file) reach
	// loopback, private, link-local and the other addresses the SSRF guard
	// refuses by default. False (the default) keeps the strict guard for
	// them whatever security.allow_private_networks and
	// security.allow_cidrs open for the operator's own endpoints.
	AllowPrivateNetworks bool `yaml:"allow_private_networks"`
	// AllowTransforms lets portal sessions set and test their endpoints'
	// transform (JavaScript). False (the default): a tenant may set a
	// filter, not a transform, and keeps one the operator set.
	AllowTransforms bool `yaml:"allow_transforms"`
	// Destinations are the destination types endpoints with a tenant may
	// use (webhook, nats, kafka, rabbitmq). Empty (the default) means
	// webhook only.
	Destinations []string `yaml:"destinations"`
}

// TenantMayUse reports whether an endpoint with a tenant may deliver to
// destination type typ (portal.destinations).
func (p Portal) TenantMayUse(typ string) bool {
	if len(p.Destinations) == 0 {
		return typ == DestinationWebhook
	}
	return slices.Contains(p.Destinations, typ)
}

// CheckTenantDestination refuses a tenant's endpoint whose destination type
// portal.destinations does not list, naming destination.type under prefix.
func (p Portal) CheckTenantDestination(prefix string, e *Endpoint) error {
	if err := p.tenantDestination(e); err != nil {
		return &FieldError{Key: child(prefix, "destination.type"), Err: err}
	}
	return nil
}

// tenantDestination is why e, an endpoint with a tenant, may not use its
// destination type; nil when it may, or it has no tenant.
func (p Portal) tenantDestination(e *Endpoint) error {
	if e.Tenant == "" || p.TenantMayUse(e.Destination.TypeName()) {
		return nil
	}
	allowed := p.Destinations
	if len(allowed) == 0 {
		allowed = []string{DestinationWebhook}
	}
	return fmt.Errorf("%q: endpoints of a tenant may use %s (portal.destinations)", e.Destination.TypeName(), strings.Join(allowed, ", "))
}

// TenantGuardReason is why the SSRF guard refuses an address to an
// endpoint with a tenant while [Portal.AllowPrivateNetworks] is off, in the
// operator's words; the portal shows its customers other words for it.
const TenantGuardReason = "the endpoint belongs to a tenant: portal.allow_private_networks is off"

// validatePortal checks the portal section.
func (c *Config) validatePortal(p *problems) {
	for i, typ := range c.Portal.Destinations {
		if !slices.Contains(DestinationTypes, typ) {
			p.add(fmt.Sprintf("portal.destinations[%d]", i), "%q: want %s", typ, strings.Join(DestinationTypes, ", "))
		}
	}
	if l := c.Portal.Listen; l != "" {
		if err := checkHostPort(l); err != nil {
			p.add("portal.listen", "%w", err)
		} else if l == c.Admin.Listen {
			p.add("portal.listen", "must differ from admin.listen (%s); leave it empty to serve the portal there", l)
		}
	}
	for i, src := range c.Portal.FrameAncestors {
		if err := checkFrameAncestor(src); err != nil {
			p.add(fmt.Sprintf("portal.frame_ancestors[%d]", i), "%q: %w", src, err)
		}
	}
}

// checkFrameAncestor accepts a CSP frame-ancestors source: 'self', 'none',
// a scheme ("https:") or an http(s) origin whose host may start with "*.".
func checkFrameAncestor(src string) error {
	switch {
	case src == "'self'" || src == "'none'" || src == "https:" || src == "http:":
		return nil
	case strings.ContainsAny(src, " \t\r\n;,'\""):
		return errors.New("want 'self', a scheme such as https: or an origin such as https://app.example.com, without spaces, quotes, commas or semicolons")
	}
	u, err := url.Parse(src)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return errors.New("want an origin such as https://app.example.com (scheme and host, optionally a port), 'self' or a scheme")
	}
	if h := strings.TrimPrefix(u.Hostname(), "*."); h == "" || strings.Contains(h, "*") {
		return errors.New("a wildcard may only be the host's first label (https://*.example.com)")
	}
	return nil
}
