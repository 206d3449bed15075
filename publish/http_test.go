package publish

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Every bad field of a request is named, under events[i] in a batch.
func TestDecodeNamesEveryBadField(t *testing.T) {
	long := strings.Repeat("k", MaxKeyLen+1)
	for _, tt := range []struct {
		name, body string
		fields     []string
		large      bool
	}{
		{"not an object", `[1]`, []string{"body"}, false},
		{"no type, no data", `{}`, []string{"data", "type"}, false},
		{"null data", `{"type":"a","data":null}`, []string{"data"}, false},
		{"null data in a batch", `{"events":[{"type":"a","data":1},{"type":"a","data": null }]}`, []string{"events[1].data"}, false},
		{"null body", `null`, []string{"body"}, false},
		{"wildcard type", `{"type":"order.*","data":{}}`, []string{"type"}, false},
		{"hookjet's own type", `{"type":"hookjet.endpoint.disabled","data":{}}`, []string{"type"}, false},
		{"hookjet's own type in a batch", `{"events":[{"type":"a","data":1},{"type":"hookjet.dead_letter","data":1}]}`, []string{"events[1].type"}, false},
		{"bad tenant and key", `{"type":"a","data":1,"tenant":"Acme","key":"` + long + `"}`, []string{"tenant", "key"}, false},
		{"id with a space, unknown field", `{"id":"a b","type":"a","data":1,"extra":1}`, []string{"extra", "id"}, false},
		{"non-string type", `{"type":5,"data":1}`, []string{"type"}, false},
		{"empty id", `{"id":"","type":"a","data":1}`, []string{"id"}, false},
		{"payload too large", `{"type":"a","data":"` + strings.Repeat("x", 100) + `"}`, []string{"data"}, true},
		{"batch", `{"events":[{"type":"a","data":1},{"data":1},{"type":"b.>","data":1,"key":""},7]}`,
			[]string{"events[1].type", "events[2].key", "events[2].type", "events[3]"}, false},
		{"batch and event fields", `{"events":[{"type":"a","data":1}],"type":"a"}`, []string{"type"}, false},
		{"empty batch", `{"events":[]}`, []string{"events"}, false},
		{"batch too long", `{"events":[` + strings.Repeat(`{"type":"a","data":1},`, MaxBatch) + `{"type":"a","data":1}]}`, []string{"events"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := decode([]byte(tt.body), 64)
			var got []string
			large := false
			for _, p := range ps {
				got = append(got, p.Field)
				large = large || p.large
				if !strings.HasPrefix(p.Error, p.Field+":") {
					t.Errorf("problem %q does not start with its field %s", p.Error, p.Field)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.fields, ",") || large != tt.large {
				t.Errorf("fields %v (too large %v), want %v (%v)", got, large, tt.fields, tt.large)
			}
		})
	}
}

// A good request decodes to its events, generated ids where none is given.
func TestDecodeEvents(t *testing.T) {
	evs, ps := decode([]byte(`{"events":[{"id":"evt_1","type":"order.created","data":{"n":1},"tenant":"acme","key":"c-1"},{"type":"order.paid","data":"paid"}]}`), 0)
	if len(ps) > 0 || len(evs) != 2 {
		t.Fatalf("%v %v", evs, ps)
	}
	if e := evs[0]; e.ID != "evt_1" || e.Type != "order.created" || string(e.Data) != `{"n":1}` || e.Tenant != "acme" || e.Key != "c-1" {
		t.Errorf("first event %+v", e)
	}
	if e := evs[1]; !strings.HasPrefix(e.ID, "evt_") || len(e.ID) != 30 || string(e.Data) != `"paid"` {
		t.Errorf("second event %+v: want a generated id", e)
	}
}

// Without the token the answer is 401; either token authorises.
func TestHandlerTokens(t *testing.T) {
	h := NewHandler(New(nil, WithWriters(1)), WithTokens("pub", "", "adm"))
	for _, tt := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer nope", 401}, {"Bearer pub", 400}, {"Bearer adm", 400}} {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/events", strings.NewReader(`{}`))
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("Authorization %q: HTTP %d, want %d", tt.auth, rec.Code, tt.want)
		}
	}
}

// A batch's answer says which events were duplicates, not only how many:
// duplicate_ids, and per event where it is stored (for a duplicate: the
// copy stored first) (walkthrough item 6 of issue 47).
func TestHandlerNamesTheDuplicates(t *testing.T) {
	store := &recordingStore{}
	c := New(store, WithLedger(&mapLedger{ids: map[string]uint64{"evt_old": 9}}, "HOOKJET_EVENTS"))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	body := `{"events":[{"id":"evt_43","type":"a","data":1},{"id":"evt_43","type":"a","data":2},{"id":"evt_old","type":"a","data":3},{"id":"evt_44","type":"a","data":4}]}`
	rec := httptest.NewRecorder()
	NewHandler(c).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/events", strings.NewReader(body)))
	var out struct {
		IDs          []string `json:"ids"`
		Duplicates   int      `json:"duplicates"`
		DuplicateIDs []string `json:"duplicate_ids"`
		Results      []struct {
			ID        string `json:"id"`
			Stream    string `json:"stream"`
			Seq       uint64 `json:"seq"`
			Duplicate bool   `json:"duplicate"`
		} `json:"results"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusAccepted {
		t.Fatalf("HTTP %d %s: %v", rec.Code, rec.Body, err)
	}
	if out.Duplicates != 2 || strings.Join(out.DuplicateIDs, ",") != "evt_43,evt_old" {
		t.Errorf("duplicates %d, duplicate_ids %v; want 2, [evt_43 evt_old]: %s", out.Duplicates, out.DuplicateIDs, rec.Body)
	}
	want := []string{"evt_43 HOOKJET_EVENTS 1 false", "evt_43 HOOKJET_EVENTS 1 true", "evt_old HOOKJET_EVENTS 9 true", "evt_44 HOOKJET_EVENTS 2 false"}
	var got []string
	for _, r := range out.Results {
		got = append(got, fmt.Sprint(r.ID, " ", r.Stream, " ", r.Seq, " ", r.Duplicate))
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("results %q, want %q", got, want)
	}
	// None: an empty list, not null.
	rec = httptest.NewRecorder()
	NewHandler(c).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/events", strings.NewReader(`{"id":"evt_45","type":"a","data":1}`)))
	if !strings.Contains(rec.Body.String(), `"duplicate_ids": []`) {
		t.Errorf("no duplicates: %s, want \"duplicate_ids\": []", rec.Body)
	}
}

// Every 400 has the one error shape (error, field, errors: [{field,
// error}]) and speaks JSON, never Go: a top-level array is "body: must be
// an object, got array", not "cannot unmarshal array into Go value of type
// map[string]json.RawMessage"; "data": null is refused, not stored to be
// POSTed as null (issue 47, walkthrough 5).
func TestHandlerErrorsHaveOneShapeInJSONWords(t *testing.T) {
	store := &recordingStore{}
	c := New(store, WithWriters(1))
	defer func() { _ = c.Close(context.Background()) }()
	h := NewHandler(c)
	for _, tt := range []struct{ name, body, field string }{
		{"top-level array", `[{"type":"a","data":1}]`, "body"},
		{"top-level string", `"x"`, "body"},
		{"not JSON", `{"type":`, "body"},
		{"empty", ``, "body"},
		{"null data", `{"type":"order.created","data":null}`, "data"},
		{"events not a list", `{"events":{"type":"a"}}`, "events"},
		{"hookjet's own type", `{"type":"hookjet.endpoint.disabled","data":{}}`, "type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/api/v1/events", strings.NewReader(tt.body))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var out struct {
				Error  string `json:"error"`
				Field  string `json:"field"`
				Errors []struct {
					Field string `json:"field"`
					Error string `json:"error"`
				} `json:"errors"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatalf("answer %q: %v", rec.Body.String(), err)
			}
			if rec.Code != http.StatusBadRequest || out.Field != tt.field || len(out.Errors) == 0 ||
				out.Errors[0].Field != out.Field || out.Errors[0].Error != out.Error {
				t.Errorf("HTTP %d %s, want 400 naming %s in field and errors", rec.Code, rec.Body.String(), tt.field)
			}
			for _, goWord := range []string{"Go value", "Go struct", "map[", "json.RawMessage", "unmarshal"} {
				if strings.Contains(rec.Body.String(), goWord) {
					t.Errorf("the answer speaks Go (%q): %s", goWord, rec.Body.String())
				}
			}
		})
	}
	if n := store.count(); n != 0 {
		t.Errorf("%d refused events were stored", n)
	}
}

// count is how many events s stored (recordingStore: probe_review_test.go).
func (s *recordingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}
