package test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/cli"
)

// The endpoint settings ordering and ordering_on_dead_letter: from the
// config file, through the admin API (set, refused naming the field, back
// to the default with null) and in `hookjet endpoints show`; every request
// and answer is checked against the OpenAPI document.
func TestOrderingSettingsFileAPIAndCLI(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "",
		endpointYAML{ID: "file", URL: r.URL, Extra: "    ordering: key\n    ordering_on_dead_letter: hold\n"}), cli.Options{})
	token := h.cfg.Admin.Token.Reveal()
	type object struct {
		Settings *struct {
			Ordering             string `json:"ordering"`
			OrderingOnDeadLetter string `json:"ordering_on_dead_letter"`
		} `json:"settings"`
		Error string `json:"error"`
		Field string `json:"field"`
	}
	var o object
	h.api("GET", "/api/v1/endpoints/file", token, nil, &o)
	if o.Settings == nil || o.Settings.Ordering != "key" || o.Settings.OrderingOnDeadLetter != "hold" {
		t.Errorf("file endpoint settings %+v, want key and hold", o.Settings)
	}

	body := map[string]any{"id": "api1", "url": r.URL, "secrets": []string{secretA, secretB}, "ordering": "key"}
	if code := h.api("POST", "/api/v1/endpoints", token, body, &o); code != 201 {
		t.Fatalf("create: HTTP %d %+v", code, o)
	}
	o = object{}
	h.api("GET", "/api/v1/endpoints/api1", token, nil, &o)
	if o.Settings == nil || o.Settings.Ordering != "key" || o.Settings.OrderingOnDeadLetter != "skip" {
		t.Errorf("api1 settings %+v, want key and the default skip", o.Settings)
	}
	o = object{}
	if code := h.api("PATCH", "/api/v1/endpoints/api1", token, map[string]any{"ordering": "fifo"}, &o); code != 400 || o.Field != "ordering" || !strings.Contains(o.Error, "must be none or key") {
		t.Errorf("ordering fifo: HTTP %d %+v, want 400 naming ordering", code, o)
	}
	o = object{}
	if code := h.api("PATCH", "/api/v1/endpoints/api1", token, map[string]any{"ordering": nil, "ordering_on_dead_letter": "hold"}, &o); code != 200 {
		t.Fatalf("patch: HTTP %d %+v", code, o)
	}
	o = object{}
	h.api("GET", "/api/v1/endpoints/api1", token, nil, &o)
	if o.Settings == nil || o.Settings.Ordering != "none" || o.Settings.OrderingOnDeadLetter != "hold" {
		t.Errorf("api1 settings after the patch %+v, want none (the default) and hold", o.Settings)
	}

	var stdout, stderr bytes.Buffer
	if err := cli.Run(t.Context(), []string{"endpoints", "show", "file", "--admin", h.srv.AdminAddr(), "--token", token}, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("endpoints show: %v %s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "ordering      key (on dead letter: hold)\n") {
		t.Errorf("endpoints show file:\n%s", stdout.String())
	}
}
