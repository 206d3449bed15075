package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestFileFilterAndTransformRefused(t *testing.T) {
	tests := []struct {
		name, yaml, key, reason string
	}{
		{"filter syntax", "    filter: 'data.amount >'\n", "endpoints[0].filter", "1:14: Syntax error"},
		{"filter not bool", "    filter: data.flag\n", "endpoints[0].filter", "1:1: yields dyn, not bool"},
		{"filter cost", "    filter: '\"a\" in data.tags'\n", "endpoints[0].filter", "1:1: estimated cost"},
		{"transform syntax", "    transform: |\n      function handler(w) {\n        return w +;\n      }\n", "endpoints[0].transform", "2:13: SyntaxError"},
		{"transform without handler", "    transform: 'function h(w) { return w }'\n", "endpoints[0].transform", "defines no function handler"},
		{"transform_timeout", "    transform_timeout: 1m\n", "endpoints[0].transform_timeout", "must be between 1ms and 10s"},
		{"transform_max_memory", "    transform_max_memory: 1KiB\n", "endpoints[0].transform_max_memory", "must be between 1MiB and 1GiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseErr(t, endpointYAML+tt.yaml, nil)
			findKeyErr(t, err, tt.key, tt.reason)
			if strings.Contains(err.Error(), "filter: filter:") || strings.Contains(err.Error(), "transform: transform:") {
				t.Errorf("the field is named twice: %v", err)
			}
		})
	}
}

func TestFileFilterAndTransform(t *testing.T) {
	c := mustParse(t, endpointYAML+"    filter: 'has(data.x) && data.x > 3'\n    transform: 'function handler(w) { return w }'\n    transform_timeout: 20ms\n", nil)
	ep := c.Endpoints[0]
	if ep.Filter != "has(data.x) && data.x > 3" || ep.Transform != "function handler(w) { return w }" {
		t.Fatalf("filter %q, transform %q", ep.Filter, ep.Transform)
	}
	if ep.TransformTimeout != 20*time.Millisecond || ep.TransformMaxMemory != 64<<20 {
		t.Fatalf("transform limits %s, %d", ep.TransformTimeout, ep.TransformMaxMemory)
	}
}

func TestEndpointJSONFilterAndTransform(t *testing.T) {
	p, err := DecodeEndpointPatch([]byte(`{"url":"https://a.example.com","secrets":["` + secretA + `"],"filter":"type == \"a\"","transform":"function handler(w) { return w }","transform_timeout":"80ms","transform_max_memory":33554432}`))
	if err != nil {
		t.Fatal(err)
	}
	spec := p.Apply(EndpointSpec{ID: "a"})
	ep, err := ResolveEndpoint(Default().Defaults, spec)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Filter != `type == "a"` || ep.Transform == "" || ep.TransformTimeout != 80*time.Millisecond || ep.TransformMaxMemory != 32<<20 {
		t.Fatalf("endpoint %+v", ep)
	}
	b, err := json.Marshal(spec.Overrides)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"transform_max_memory":33554432,"transform_timeout":"80ms"}` {
		t.Fatalf("overrides %s", b)
	}
	// null removes them
	p, err = DecodeEndpointPatch([]byte(`{"filter":null,"transform":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if spec = p.Apply(spec); spec.Filter != "" || spec.Transform != "" {
		t.Fatalf("null kept %q %q", spec.Filter, spec.Transform)
	}
	// a wrong type names the field
	_, err = DecodeEndpointPatch([]byte(`{"filter":3}`))
	findKeyErr(t, err, "filter", "want a string")
	// CheckCode names the field, with the position
	fes := Default().Security.CheckCode(Endpoint{Filter: "data.a >", Transform: "function handler(w) {"})
	if len(fes) != 2 || fes[0].Key != "filter" || fes[1].Key != "transform" {
		t.Fatalf("CheckCode = %v", fes)
	}
	if got := fes[0].Error(); !strings.HasPrefix(got, "filter: 1:9: ") {
		t.Errorf("filter error %q", got)
	}
	if got := fes[1].Error(); !strings.HasPrefix(got, "transform: 1:") {
		t.Errorf("transform error %q", got)
	}
}
