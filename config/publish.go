package config

import "strings"

// Publish configures the publish API: POST /api/v1/events on the admin
// API (and on Listen), and the NATS requests to hookjet.publish.<type>
// (package publish).
type Publish struct {
	// Token is the bearer token that authorises POST /api/v1/events, beside
	// admin.token (either works). Empty: only admin.token does, or nothing
	// when that is empty too (loopback only).
	Token Secret `yaml:"token"`
	// Listen is an address of its own (host:port) for the publish API,
	// which serves POST /api/v1/events and nothing of the admin API, for
	// applications that should not reach the admin API. Empty (the
	// default): none. A non-loopback address requires publish.token or
	// admin.token.
	Listen string `yaml:"listen"`
}

// validatePublish checks the publish section.
func (c *Config) validatePublish(p *problems) {
	l := c.Publish.Listen
	if l == "" {
		return
	}
	switch err := checkHostPort(l); {
	case err != nil:
		p.add("publish.listen", "%w", err)
	case strings.HasSuffix(l, ":0"): // a free port: never another listener's
	case l == c.Admin.Listen:
		p.add("publish.listen", "must differ from admin.listen (%s): the admin API serves POST /api/v1/events already", l)
	case l == c.Inbound.Listen || l == c.Portal.Listen:
		p.add("publish.listen", "must differ from inbound.listen and portal.listen (%s)", l)
	}
	if c.Publish.Token.IsZero() && c.Admin.Token.IsZero() && !isLoopback(l) && checkHostPort(l) == nil {
		p.add("publish.token", "required when publish.listen (%s) is not a loopback address (or set admin.token)", l)
	}
}
