package publish

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// A publish request's error reply names every bad field, as the HTTP API
// does (error and field: the first; errors: each one), and a request
// whose headers disagree about its id, tenant or key is refused naming the
// field; nothing is stored.
func TestAnswerNamesEveryBadField(t *testing.T) {
	store := &recordingStore{}
	c := New(store, WithMaxPayload(8))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	for _, tt := range []struct {
		name, typ string
		h         map[string][]string
		data      string
		fields    []string
	}{
		{"bad type, tenant and key", "order.*", map[string][]string{"Hookjet-Tenant": {"ACME"}, "Hookjet-Ordering-Key": {" k"}}, `{}`, []string{"type", "tenant", "key"}},
		{"hookjet's own type", "hookjet.dead_letter", nil, `{}`, []string{"type"}},
		{"bad id and payload", "order.created", map[string][]string{"Nats-Msg-Id": {"a b"}}, `{"n":123456}`, []string{"id", "data"}},
		{"two ids", "order.created", map[string][]string{"Nats-Msg-Id": {"evt_1"}, "nats-msg-id": {"evt_2"}}, `{}`, []string{"id"}},
		{"two keys and two tenants", "order.created", map[string][]string{"Hookjet-Ordering-Key": {"a", "b"}, "HOOKJET-TENANT": {"acme"}, "Hookjet-Tenant": {"globex"}}, `{}`, []string{"tenant", "key"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := c.Answer(context.Background(), tt.typ, tt.h, []byte(tt.data))
			var r struct { // the HTTP API's shape
				Error  string    `json:"error"`
				Field  string    `json:"field"`
				Errors []Problem `json:"errors"`
			}
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range r.Errors {
				got = append(got, p.Field)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.fields))
			if !slices.Equal(got, want) || r.Error == "" || !slices.Contains(want, r.Field) {
				t.Errorf("reply %s: fields %v, want %v (and error, field naming one)", body, got, want)
			}
		})
	}
	// The same tenant twice is one tenant.
	body := c.Answer(context.Background(), "order.created", map[string][]string{"Hookjet-Tenant": {"acme"}, "hookjet-tenant": {"acme"}}, []byte(`{}`))
	if r, err := ParseReply(body); err != nil || r.Duplicate {
		t.Errorf("one tenant spelt twice: %s, %v", body, err)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.got) != 1 || store.got[0].Tenant != "acme" {
		t.Errorf("stored %+v, want the one good request, tenant acme", store.got)
	}
}
