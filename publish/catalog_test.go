package publish

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/catalog"
)

// Under enforce the HTTP route answers 422 listing every problem of every
// event of a batch, by index and JSON pointer, and stores none of them;
// under warn it stores them; strict refuses a type not in the catalogue.
func TestHandlerRefusesWhatTheCatalogueRefuses(t *testing.T) {
	typ, err := catalog.Compile(catalog.Definition{Name: "order.created", Schema: json.RawMessage(`{"type":"object","required":["amount"],"properties":{"amount":{"type":"number"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	live := catalog.NewLive(catalog.New(catalog.Enforce, false, []*catalog.Type{typ}, nil))
	store := &recordingStore{}
	c := New(store, WithCatalog(live))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	h := NewHandler(c)
	post := func(body string) (int, fieldError) {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/v1/events", strings.NewReader(body)))
		var fe fieldError
		_ = json.Unmarshal(w.Body.Bytes(), &fe)
		return w.Code, fe
	}
	batch := `{"events":[{"type":"order.created","data":{"amount":1}},{"type":"order.created","data":{"amount":"1"}},{"type":"order.created","data":[]},{"type":"lead.created","data":7}]}`
	code, fe := post(batch)
	var got []string
	for _, p := range fe.Errors {
		got = append(got, p.Field+"|"+p.Error)
	}
	want := []string{"events[1].data/amount|events[1].data/amount: want number, got string", "events[2].data|events[2].data: want object, got array"}
	if code != http.StatusUnprocessableEntity || strings.Join(got, "\n") != strings.Join(want, "\n") || fe.Field != "events[1].data/amount" {
		t.Errorf("enforce: HTTP %d %+v, want 422 with %q", code, fe, want)
	}
	if len(store.got) != 0 {
		t.Errorf("enforce: %d events stored, want none", len(store.got))
	}

	live.Store(catalog.New(catalog.Warn, true, []*catalog.Type{typ}, nil))
	if code, fe := post(batch); code != http.StatusUnprocessableEntity || fe.Field != "events[3].type" || len(fe.Errors) != 1 {
		t.Errorf("strict: HTTP %d %+v, want 422 naming events[3].type alone", code, fe)
	}
	live.Store(catalog.New(catalog.Warn, false, []*catalog.Type{typ}, nil))
	if code, fe := post(batch); code != http.StatusAccepted || len(store.got) != 4 {
		t.Errorf("warn: HTTP %d %+v, %d stored; want 202 and 4", code, fe, len(store.got))
	}
	// One event: the fields carry no index.
	live.Store(catalog.New(catalog.Enforce, false, []*catalog.Type{typ}, nil))
	if code, fe := post(`{"type":"order.created","data":{"events":1}}`); code != http.StatusUnprocessableEntity || fe.Field != "data/amount" || fe.Error != "data/amount: is required" {
		t.Errorf("one event: HTTP %d %+v", code, fe)
	}
}
