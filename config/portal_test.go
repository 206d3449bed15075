package config

import "testing"

func TestPortalDefaultsAndOverrides(t *testing.T) {
	if d := Default().Portal; d.Listen != "" || d.FrameAncestors != nil {
		t.Fatalf("Default().Portal = %+v, want empty", d)
	}
	c := mustParse(t, "portal:\n  listen: 0.0.0.0:8443\n  frame_ancestors: [\"https://app.example.com\", \"'self'\"]\nadmin: {token: t0ken}\n",
		map[string]string{"HOOKJET_PORTAL_FRAME_ANCESTORS": "https://*.example.com,https://b.example.com:8443"})
	p := c.Portal
	if p.Listen != "0.0.0.0:8443" || len(p.FrameAncestors) != 2 || p.FrameAncestors[0] != "https://*.example.com" || p.FrameAncestors[1] != "https://b.example.com:8443" {
		t.Fatalf("Portal = %+v", p)
	}
}

func TestPortalInvalid(t *testing.T) {
	tests := []struct{ name, data, key, substr string }{
		{"listen not host:port", "portal: {listen: nope}\n", "portal.listen", "host:port"},
		{"listen is admin's", "portal: {listen: '127.0.0.1:8089'}\n", "portal.listen", "must differ from admin.listen"},
		{"ancestor with semicolon", "portal: {frame_ancestors: [\"https://a.example.com; script-src *\"]}\n", "portal.frame_ancestors[0]", "without spaces"},
		{"ancestor with path", "portal: {frame_ancestors: [\"https://a.example.com/app\"]}\n", "portal.frame_ancestors[0]", "want an origin"},
		{"ancestor javascript", "portal: {frame_ancestors: [\"https://ok.example.com\", \"javascript:alert(1)\"]}\n", "portal.frame_ancestors[1]", "want an origin"},
		{"ancestor inner wildcard", "portal: {frame_ancestors: [\"https://a.*.example.com\"]}\n", "portal.frame_ancestors[0]", "wildcard"},
		{"ancestor unsafe-inline", "portal: {frame_ancestors: [\"'unsafe-inline'\"]}\n", "portal.frame_ancestors[0]", "without spaces, quotes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			findKeyErr(t, parseErr(t, tt.data, nil), tt.key, tt.substr)
		})
	}
}
