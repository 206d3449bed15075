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
