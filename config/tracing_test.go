package config

import (
	"strings"
	"testing"
)

func TestTracingKeys(t *testing.T) {
	if d := Default(); d.Tracing.Enabled || d.Tracing.ServiceName != "" {
		t.Errorf("tracing is not off by default: %+v", d.Tracing)
	}
	c := mustParse(t, "tracing:\n  enabled: true\n  service_name: shop-hooks\n", nil)
	if !c.Tracing.Enabled || c.Tracing.ServiceName != "shop-hooks" {
		t.Errorf("file: %+v", c.Tracing)
	}
	c = mustParse(t, "", map[string]string{"HOOKJET_TRACING_ENABLED": "true"})
	if !c.Tracing.Enabled {
		t.Error("HOOKJET_TRACING_ENABLED=true did not turn tracing on")
	}
	if err := parseErr(t, "tracing:\n  enabeld: true\n", nil); !strings.Contains(err.Error(), "tracing.enabeld") {
		t.Errorf("a misspelt key: %v", err)
	}
}
