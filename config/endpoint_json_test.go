package config

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// firstField returns the key of the first FieldError in err.
func firstField(t *testing.T, err error) (string, string) {
	t.Helper()
	fe, ok := errors.AsType[*FieldError](err)
	if !ok {
		t.Fatalf("error %v (%T) holds no *FieldError", err, err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error %v does not wrap ErrInvalid", err)
	}
	return fe.Key, fe.Err.Error()
}

// resolveJSON decodes body and resolves it against the default settings.
func resolveJSON(body string) (Endpoint, error) {
	p, err := DecodeEndpointPatch([]byte(body))
	if err != nil {
		return Endpoint{}, err
	}
	return ResolveEndpoint(Default().Defaults, p.Apply(EndpointSpec{}))
}

func TestEndpointJSONBadFields(t *testing.T) {
	const ok = `"id":"a","url":"https://a.example.com/","secrets":["` + secretA + `"]`
	tests := []struct {
		name, body, field, reason string
	}{
		{"not an object", `[1]`, "body", "must be a JSON object"},
		{"not JSON", `{"url":`, "body", "invalid JSON"},
		{"trailing data", `{` + ok + `} {}`, "body", "nothing after it"},
		{"unknown field", `{` + ok + `,"retyr":{}}`, "retyr", `did you mean "retry"`},
		{"unknown nested field", `{` + ok + `,"retry":{"max_atempts":3}}`, "retry.max_atempts", `did you mean "max_attempts"`},
		{"missing url", `{"id":"a","secrets":["` + secretA + `"]}`, "url", "is required"},
		{"bad scheme", `{"id":"a","url":"ftp://x/","secrets":["` + secretA + `"]}`, "url", "scheme must be http or https"},
		{"url user info", `{"id":"a","url":"https://u:p@x/","secrets":["` + secretA + `"]}`, "url", "user info"},
		{"url not a string", `{"id":"a","url":5,"secrets":["` + secretA + `"]}`, "url", "want a string, got number"},
		{"bad id", `{"id":"A B","url":"https://a.example.com/","secrets":["` + secretA + `"]}`, "id", "may contain only"},
		{"outbox id", `{"id":"_outbox","url":"https://a.example.com/","secrets":["` + secretA + `"]}`, "id", "reserved for rejected outbox rows"},
		{"metrics overflow id", `{"id":"_other","url":"https://a.example.com/","secrets":["` + secretA + `"]}`, "id", "reserved for the metrics series"},
		{"long id", `{"id":"` + strings.Repeat("a", 65) + `","url":"https://a.example.com/","secrets":["` + secretA + `"]}`, "id", "at most 64"},
		{"bad secret", `{"id":"a","url":"https://a.example.com/","secrets":["nope"]}`, "secrets[0]", "whsec_"},
		{"no secrets", `{"id":"a","url":"https://a.example.com/","secrets":[]}`, "secrets", "at least one"},
		{"bad pattern", `{` + ok + `,"events":["a..b"]}`, "events[0]", ""},
		{"same header twice", `{` + ok + `,"headers":{"X-A":"1","x-a":"2"}}`, "headers", "same header"},
		{"empty events", `{` + ok + `,"events":[]}`, "events", "at least one pattern"},
		{"events not a list", `{` + ok + `,"events":"order.*"}`, "events", "want a list of patterns, got string"},
		{"reserved header", `{` + ok + `,"headers":{"Webhook-Id":"x"}}`, "headers.Webhook-Id", "set by hookjet"},
		{"header control char", `{` + ok + `,"headers":{"X-A":"a\nb"}}`, "headers.X-A", "control characters"},
		{"timeout without unit", `{` + ok + `,"timeout":"15"}`, "timeout", "use a unit"},
		{"timeout as number", `{` + ok + `,"timeout":15}`, "timeout", "duration string"},
		{"timeout too long", `{` + ok + `,"timeout":"11m"}`, "timeout", "between"},
		{"max_in_flight zero", `{` + ok + `,"max_in_flight":0}`, "max_in_flight", "between 1"},
		{"max_in_flight float", `{` + ok + `,"max_in_flight":1.5}`, "max_in_flight", "want an integer"},
		{"max_in_flight string", `{` + ok + `,"max_in_flight":"4"}`, "max_in_flight", "want an integer"},
		{"rps negative", `{` + ok + `,"rate_limit":{"rps":-1}}`, "rate_limit.rps", "between 0"},
		{"burst negative", `{` + ok + `,"rate_limit":{"burst":-1}}`, "rate_limit.burst", "negative"},
		{"rate_limit not an object", `{` + ok + `,"rate_limit":5}`, "rate_limit", "want an object"},
		{"retry.max_attempts", `{` + ok + `,"retry":{"max_attempts":0}}`, "retry.max_attempts", "between 1"},
		{"retry.cap below base", `{` + ok + `,"retry":{"base":"2h"}}`, "retry.cap", "at least retry.base"},
		{"retry.base negative", `{` + ok + `,"retry":{"base":"-1s"}}`, "retry.base", "negative"},
		{"breaker.failure_threshold", `{` + ok + `,"breaker":{"failure_threshold":0}}`, "breaker.failure_threshold", "between 1"},
		{"breaker.max_cooldown", `{` + ok + `,"breaker":{"cooldown":"2h"}}`, "breaker.max_cooldown", "at least breaker.cooldown"},
		{"insecure_skip_verify", `{` + ok + `,"insecure_skip_verify":"yes"}`, "insecure_skip_verify", "true or false"},
		{"ordering bad", `{` + ok + `,"ordering":"fifo"}`, "ordering", `must be none or key, got "fifo"`},
		{"ordering not a string", `{` + ok + `,"ordering":true}`, "ordering", "want a string, got bool"},
		{"ordering_on_dead_letter bad", `{` + ok + `,"ordering_on_dead_letter":"drop"}`, "ordering_on_dead_letter", "must be skip or hold"},
		{"ordering typo", `{` + ok + `,"orderng":"key"}`, "orderng", `did you mean "ordering"`},
		{"tenant too long", `{` + ok + `,"tenant":"` + strings.Repeat("t", 1025) + `"}`, "tenant", "at most 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resolveJSON(tt.body)
			if err == nil {
				t.Fatal("accepted")
			}
			field, reason := firstField(t, err)
			if field != tt.field || !strings.Contains(reason, tt.reason) {
				t.Errorf("got %s: %s, want %s: ...%s...", field, reason, tt.field, tt.reason)
			}
			if strings.Contains(err.Error(), strings.TrimPrefix(secretA, "whsec_")) {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}

func TestEndpointJSONErrorsNeverShowValues(t *testing.T) {
	_, err := resolveJSON(`{"id":"a","url":"https://a.example.com/","secrets":["whsec_c2VjcmV0"],"headers":{"X-Key":"top\nsecret"}}`)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, s := range []string{"c2VjcmV0", "top", "secret\""} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q shows %q", err, s)
		}
	}
}

func TestResolveEndpointMergesFieldByField(t *testing.T) {
	ep, err := resolveJSON(`{"id":"a","url":"https://a.example.com/","secrets":["` + secretA + `"],
		"retry":{"max_attempts":4},"rate_limit":{"rps":2.5},"timeout":"3s","tenant":"acme","description":"d"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := Default().Defaults
	want.Retry.MaxAttempts = 4
	want.Timeout = 3 * time.Second
	want.RateLimit = RateLimit{RPS: 2.5, Burst: 3}
	if !reflect.DeepEqual(ep.Settings, want) {
		t.Errorf("settings = %+v, want %+v", ep.Settings, want)
	}
	if !reflect.DeepEqual(ep.Events, []string{">"}) || ep.Tenant != "acme" || ep.Description != "d" {
		t.Errorf("events %v tenant %q description %q", ep.Events, ep.Tenant, ep.Description)
	}
}

func TestDefaultsReachNonOverriddenSettings(t *testing.T) {
	p, err := DecodeEndpointPatch([]byte(`{"id":"a","url":"https://a.example.com/","secrets":["` + secretA + `"],"retry":{"max_attempts":4}}`))
	if err != nil {
		t.Fatal(err)
	}
	spec := p.Apply(EndpointSpec{})
	d := Default().Defaults
	d.Retry.Base = 7 * time.Second
	ep, err := ResolveEndpoint(d, spec)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Retry.Base != 7*time.Second || ep.Retry.MaxAttempts != 4 {
		t.Errorf("retry = %+v, want base from the new defaults and max_attempts 4", ep.Retry)
	}
}

func TestEndpointPatchNullRestoresDefault(t *testing.T) {
	create, err := DecodeEndpointPatch([]byte(`{"url":"https://a.example.com/","tenant":"t","events":["a.*"],"retry":{"max_attempts":4,"base":"1s"},"timeout":"3s"}`))
	if err != nil {
		t.Fatal(err)
	}
	spec := create.Apply(EndpointSpec{ID: "a"})
	patch, err := DecodeEndpointPatch([]byte(`{"tenant":null,"events":null,"retry":{"max_attempts":null},"breaker":{"cooldown":"1m"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := patch.Apply(spec)
	if got.Tenant != "" || got.Events != nil || got.URL != "https://a.example.com/" || got.ID != "a" {
		t.Errorf("spec = %+v", got)
	}
	o := got.Overrides
	if o.RetryMaxAttempts != nil || o.RetryBase == nil || *o.RetryBase != time.Second || o.Timeout == nil || o.BreakerCooldown == nil {
		t.Errorf("overrides = %+v", o)
	}
	if !patch.Has("retry.max_attempts") || patch.Has("retry.base") || patch.Has("url") {
		t.Error("Has does not report the fields given")
	}
	section, err := DecodeEndpointPatch([]byte(`{"retry":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if o := section.Apply(spec).Overrides; o.RetryBase != nil || o.RetryMaxAttempts != nil || o.Timeout == nil {
		t.Errorf("retry: null left %+v", o)
	}
}

func TestOverridesJSONRoundTrip(t *testing.T) {
	p, err := DecodeEndpointPatch([]byte(`{"timeout":"3s","max_in_flight":2,"ordering":"key","rate_limit":{"rps":1.5,"burst":2},"retry":{"cap":"2h","max_attempts":4},"breaker":{"slow_p95":"750ms"}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p.Overrides)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"breaker":{"slow_p95":"750ms"},"max_in_flight":2,"ordering":"key","rate_limit":{"burst":2,"rps":1.5},"retry":{"cap":"2h0m0s","max_attempts":4},"timeout":"3s"}`
	if string(b) != want {
		t.Errorf("marshal = %s, want %s", b, want)
	}
	var back Overrides
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, p.Overrides) {
		t.Errorf("round trip = %+v, want %+v", back, p.Overrides)
	}
	if err := json.Unmarshal([]byte(`{"retry":{"bse":"1s"}}`), &back); err == nil {
		t.Error("unknown stored field accepted")
	}
}

// ordering and ordering_on_dead_letter are overrides like the others: set,
// inherited from the defaults when not, and back to the default with null.
func TestEndpointOrderingSettings(t *testing.T) {
	ep, err := resolveJSON(`{"id":"a","url":"https://a.example.com/","secrets":["` + secretA + `"],"ordering":"key","ordering_on_dead_letter":"hold"}`)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Ordering != OrderingKey || ep.OrderingOnDeadLetter != OnDeadLetterHold || !ep.Ordered() || !ep.HoldsOnDeadLetter() {
		t.Errorf("ordering %q on dead letter %q", ep.Ordering, ep.OrderingOnDeadLetter)
	}
	plain, err := resolveJSON(`{"id":"a","url":"https://a.example.com/","secrets":["` + secretA + `"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Ordering != OrderingNone || plain.OrderingOnDeadLetter != OnDeadLetterSkip || plain.Ordered() || plain.HoldsOnDeadLetter() {
		t.Errorf("defaults: ordering %q on dead letter %q", plain.Ordering, plain.OrderingOnDeadLetter)
	}
	create, err := DecodeEndpointPatch([]byte(`{"ordering":"key"}`))
	if err != nil {
		t.Fatal(err)
	}
	spec := create.Apply(EndpointSpec{})
	d := Default().Defaults
	d.OrderingOnDeadLetter = OnDeadLetterHold
	if ep, err := ResolveEndpoint(d, SpecOf(Endpoint{ID: "a", URL: "https://a.example.com/", Secrets: []Secret{NewSecret(secretA)}, Settings: Default().Defaults})); err != nil || ep.OrderingOnDeadLetter != OnDeadLetterSkip {
		t.Errorf("SpecOf loses the endpoint's own ordering_on_dead_letter: %q, %v", ep.OrderingOnDeadLetter, err)
	}
	reset, err := DecodeEndpointPatch([]byte(`{"ordering":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Overrides.Ordering == nil || *spec.Overrides.Ordering != OrderingKey || reset.Apply(spec).Overrides.Ordering != nil {
		t.Error("ordering: null does not restore the default")
	}
	if (Settings{}).Ordered() || (Settings{}).HoldsOnDeadLetter() {
		t.Error("empty settings are ordered or hold")
	}
}

// SpecAgainst overrides only what differs from its base, and resolving
// the result against that base gives the endpoint back, whatever the
// reader's own defaults would have been.
func TestSpecAgainstKeepsOnlyWhatDiffers(t *testing.T) {
	base := Default().Defaults
	s := base
	s.Timeout, s.Retry.MaxAttempts, s.RateLimit.RPS, s.RateLimit.Burst, s.Ordering = 2*time.Second, 3, 2.5, 4, OrderingKey
	ep := Endpoint{ID: "a", URL: "https://a.example.com/", Secrets: []Secret{NewSecret(secretA)}, Settings: s}
	spec := SpecAgainst(ep, base)
	b, err := json.Marshal(spec.Overrides)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ordering":"key","rate_limit":{"burst":4,"rps":2.5},"retry":{"max_attempts":3},"timeout":"2s"}`; string(b) != want {
		t.Errorf("overrides %s, want %s", b, want)
	}
	got, err := ResolveEndpoint(base, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got.Settings != s {
		t.Errorf("resolved against its base:\n%+v\nwant\n%+v", got.Settings, s)
	}
	if all := SpecAgainst(Endpoint{ID: "a", Settings: base}, base); all.Overrides != (Overrides{}) {
		t.Errorf("an endpoint with the base's settings overrides %+v", all.Overrides)
	}
}

func TestSecurityCheckURL(t *testing.T) {
	s := Security{HTTPSOnly: true}
	if err := s.CheckURL("http://a.example.com/"); err == nil {
		t.Error("http accepted with https_only")
	} else if key, _ := firstField(t, err); key != "url" {
		t.Errorf("key = %s", key)
	}
	if err := s.CheckURL("https://a.example.com/"); err != nil {
		t.Error(err)
	}
}

func TestSecretKeyValidation(t *testing.T) {
	tests := []struct{ name, yaml, reason string }{
		{"short", "security: {secret_key: c2hvcnQ=}\n", "must decode to 32 bytes"},
		{"not base64", "security: {secret_key: '!!!'}\n", "base64"},
		{"negative series", "metrics: {max_endpoint_series: -1}\n", "between 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), nil)
			if err == nil || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("err = %v, want ...%s...", err, tt.reason)
			}
			key, _ := firstField(t, err)
			if want := map[bool]string{true: "metrics.max_endpoint_series", false: "security.secret_key"}[tt.name == "negative series"]; key != want {
				t.Errorf("key = %s, want %s", key, want)
			}
			if strings.Contains(err.Error(), "c2hvcnQ") {
				t.Errorf("error shows the key: %v", err)
			}
		})
	}
	c, err := Parse([]byte("security: {secret_key: env:K}\n"), func(k string) string {
		if k == "K" {
			return "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if k, err := DecodeSecretKey(c.Security.SecretKey); err != nil || string(k) != "0123456789abcdef0123456789abcdef" {
		t.Errorf("key %q, %v", k, err)
	}
}
