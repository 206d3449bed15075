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
		{"wildcard type", `{"type":"order.*","data":{}}`, []string{"type"}, false},
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
	evs, ps := decode([]byte(`{"events":[{"id":"evt_1","type":"order.created","data":{"n":1},"tenant":"acme","key":"c-1"},{"type":"order.paid","data":null}]}`), 0)
	if len(ps) > 0 || len(evs) != 2 {
		t.Fatalf("%v %v", evs, ps)
	}
	if e := evs[0]; e.ID != "evt_1" || e.Type != "order.created" || string(e.Data) != `{"n":1}` || e.Tenant != "acme" || e.Key != "c-1" {
		t.Errorf("first event %+v", e)
	}
	if e := evs[1]; !strings.HasPrefix(e.ID, "evt_") || len(e.ID) != 30 || string(e.Data) != "null" {
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
