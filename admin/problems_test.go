package admin

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// A body with several problems gets all of them at once,
// each with its field; "error" and "field" keep the first.
func TestEveryProblemOfABodyAtOnce(t *testing.T) {
	f := newFixture(t)
	f.cfg.Security.HTTPSOnly = true
	body := `{"id":"Shop!","url":"http://x.example.com/","events":["a..b"],"retry":{"max_attempts":0},"max_in_flight":-1}`
	for _, tt := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/endpoints"},
	} {
		before := f.revisions(t)
		status, _, out := f.do(t, tt.method, tt.path, body)
		if status != http.StatusBadRequest {
			t.Fatalf("%s %s: status %d: %v", tt.method, tt.path, status, out)
		}
		list, _ := out["errors"].([]any)
		var fields []string
		for _, e := range list {
			m, _ := e.(map[string]any)
			field, _ := m["field"].(string)
			msg, _ := m["error"].(string)
			if field == "" || msg == "" {
				t.Errorf("problem without field or error: %v", e)
			}
			fields = append(fields, field)
		}
		for _, want := range []string{"id", "url", "events[0]", "retry.max_attempts", "max_in_flight"} {
			if !slices.Contains(fields, want) {
				t.Errorf("errors name %v, want %s among them: %v", fields, want, out)
			}
		}
		if len(fields) == 0 || out["field"] != fields[0] || !strings.Contains(out["error"].(string), fields[0]) {
			t.Errorf("error/field %v/%v are not the first problem %v", out["error"], out["field"], fields)
		}
		if f.revisions(t) != before {
			t.Error("a refused request wrote to the bucket")
		}
	}
	f.cfg.Security.HTTPSOnly = false
	if status, _, _ := f.do(t, http.MethodPost, "/api/v1/endpoints", createBody); status != http.StatusCreated {
		t.Fatal(status)
	}
	status, _, out := f.do(t, http.MethodPatch, "/api/v1/endpoints/shop", `{"url":"ftp://x","retry":{"cap":"0s"},"timeout":"-1s"}`)
	list, _ := out["errors"].([]any)
	if status != http.StatusBadRequest || len(list) < 2 {
		t.Errorf("PATCH with several problems: %d %v, want 400 with each", status, out)
	}
}

// The 409 for an id that exists names the field id.
func TestExistingIDConflictNamesID(t *testing.T) {
	f := newFixture(t)
	if status, _, _ := f.do(t, http.MethodPost, "/api/v1/endpoints", createBody); status != http.StatusCreated {
		t.Fatal(status)
	}
	status, _, out := f.do(t, http.MethodPost, "/api/v1/endpoints", createBody)
	if status != http.StatusConflict || out["field"] != "id" {
		t.Fatalf("status %d %v, want 409 with field id", status, out)
	}
}

// Every write of endpoint management is applied in the
// answering process, with the revision it wrote, before the answer.
func TestWritesAreAppliedBeforeTheAnswer(t *testing.T) {
	f := newFixture(t)
	steps := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{http.MethodPost, "/api/v1/endpoints", createBody, http.StatusCreated, "applied shop 1"},
		{http.MethodPatch, "/api/v1/endpoints/shop", `{"url":"https://b.example.com/"}`, http.StatusOK, "applied shop 2"},
		{http.MethodPost, "/api/v1/endpoints/shop/secret/rotate", `{}`, http.StatusOK, "applied shop 3"},
		{http.MethodDelete, "/api/v1/endpoints/shop", "", http.StatusNoContent, "removed shop 3"},
	}
	for i, st := range steps {
		status, _, out := f.do(t, st.method, st.path, st.body)
		if status != st.status {
			t.Fatalf("%s %s: %d %v", st.method, st.path, status, out)
		}
		if got := f.eng.Applies(); len(got) != i+1 || got[i] != st.want {
			t.Fatalf("after %s %s: engine applies %v, want %q last", st.method, st.path, got, st.want)
		}
	}
	if status, _, _ := f.do(t, http.MethodPatch, "/api/v1/endpoints/shop", `{"url":"ftp://x"}`); status != http.StatusBadRequest && status != http.StatusNotFound {
		t.Fatal(status)
	}
	if got := f.eng.Applies(); len(got) != len(steps) {
		t.Fatalf("a refused request was applied: %v", got)
	}
}

// Every 400 of the admin API has the one error shape (error, field,
// errors: [{field, error}]) with the path of the field at fault, in JSON's
// words, never a Go type name (issue 47, walkthrough 5: a top-level array
// was "json: cannot unmarshal array into Go value of type ...", and a bad
// header value was reported on headers, not headers.X-A).
func TestBadRequestsHaveOneShapeAndFieldPaths(t *testing.T) {
	f := newFixture(t)
	if status, _, _ := f.do(t, http.MethodPost, "/api/v1/endpoints", createBody); status != http.StatusCreated {
		t.Fatal(status)
	}
	for _, tt := range []struct{ name, method, path, body, field string }{
		{"create: top-level array", "POST", "/api/v1/endpoints", `[{"url":"https://x.example.com/"}]`, "body"},
		{"create: header value not a string", "POST", "/api/v1/endpoints", `{"url":"https://x.example.com/","headers":{"X-A":5,"X-B":"ok"}}`, "headers.X-A"},
		{"create: pattern not a string", "POST", "/api/v1/endpoints", `{"url":"https://x.example.com/","events":["a.*",7]}`, "events[1]"},
		{"create: secret not a string", "POST", "/api/v1/endpoints", `{"url":"https://x.example.com/","secrets":[true]}`, "secrets[0]"},
		{"patch: header value not a string", "PATCH", "/api/v1/endpoints/shop", `{"headers":{"X-A":{"v":1}}}`, "headers.X-A"},
		{"rotate: top-level array", "POST", "/api/v1/endpoints/shop/secret/rotate", `[]`, "body"},
		{"rotate: grace not a string", "POST", "/api/v1/endpoints/shop/secret/rotate", `{"grace":5}`, "grace"},
		{"redeliver: since not a string", "POST", "/api/v1/endpoints/shop/redeliver", `{"since":1}`, "since"},
		{"replay: top-level array", "POST", "/api/v1/dlq/replay", `[1]`, "body"},
		{"replay: ids not a list", "POST", "/api/v1/dlq/replay", `{"ids":"evt_1"}`, "ids"},
		{"replay: null", "POST", "/api/v1/dlq/replay", `null`, "body"},
		{"replay: two objects", "POST", "/api/v1/dlq/replay", `{} {}`, "body"},
		{"dlq: bad limit", "GET", "/api/v1/dlq?limit=0", ``, "limit"},
		{"dlq: bad since", "GET", "/api/v1/dlq?since=yesterday", ``, "since"},
		{"dlq: bad deleted", "GET", "/api/v1/dlq?deleted=maybe", ``, "deleted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _, out := f.do(t, tt.method, tt.path, tt.body)
			if status != http.StatusBadRequest {
				t.Fatalf("HTTP %d %v, want 400", status, out)
			}
			msg, _ := out["error"].(string)
			list, _ := out["errors"].([]any)
			if out["field"] != tt.field || len(list) == 0 {
				t.Fatalf("answer %v: want field %q and errors", out, tt.field)
			}
			first, _ := list[0].(map[string]any)
			if first["field"] != tt.field || first["error"] != msg || !strings.HasPrefix(msg, tt.field+": ") {
				t.Errorf("answer %v: errors[0] is not field %q with the error", out, tt.field)
			}
			for _, goWord := range []string{"Go value", "Go struct", "map[", "json.RawMessage", "[]string", "unmarshal"} {
				if strings.Contains(msg, goWord) {
					t.Errorf("the error speaks Go (%q): %s", goWord, msg)
				}
			}
		})
	}
}
