package opsevent

import (
	"bytes"
	"testing"
)

// An event hookjet marked is recognised with the endpoint it is about;
// changing its id, type, tenant or payload, or marking it with another
// key, makes it no event of hookjet's.
func TestAboutRecognisesOnlyHookjetsMark(t *testing.T) {
	k := NewKey(bytes.Repeat([]byte{1}, 32))
	p := New(Options{Key: k})
	msg := p.message(Payload{Type: TypeDisabled, Endpoint: Endpoint{ID: "crm"}, Tenant: "acme", Reason: "gone", Count: 1}, "id-1")
	h := map[string][]string(msg.Header)
	if ep, ok := k.About("id-1", TypeDisabled, "acme", h, msg.Data); !ok || ep != "crm" {
		t.Fatalf("About = %q, %v; want crm, true", ep, ok)
	}
	other := NewKey(bytes.Repeat([]byte{2}, 32))
	for _, tt := range []struct {
		name         string
		k            Key
		id, typ, ten string
		data         []byte
	}{
		{"another key", other, "id-1", TypeDisabled, "acme", msg.Data},
		{"no key", Key{}, "id-1", TypeDisabled, "acme", msg.Data},
		{"another id", k, "id-2", TypeDisabled, "acme", msg.Data},
		{"another type", k, "id-1", TypeEnabled, "acme", msg.Data},
		{"another tenant", k, "id-1", TypeDisabled, "globex", msg.Data},
		{"no tenant", k, "id-1", TypeDisabled, "", msg.Data},
		{"another payload", k, "id-1", TypeDisabled, "acme", bytes.Replace(msg.Data, []byte("crm"), []byte("erp"), 1)},
	} {
		if ep, ok := tt.k.About(tt.id, tt.typ, tt.ten, h, tt.data); ok {
			t.Errorf("%s: About = %q, true; want false", tt.name, ep)
		}
	}
	if _, ok := k.About("id-1", TypeDisabled, "acme", map[string][]string{}, msg.Data); ok {
		t.Error("an event without the mark is hookjet's")
	}
	if _, ok := (*Publisher)(nil).About("id-1", TypeDisabled, "acme", h, msg.Data); ok {
		t.Error("a nil Publisher recognised an event")
	}
}
