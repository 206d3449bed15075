package outbox

import (
	"reflect"
	"strings"
	"testing"
)

func TestMessageRejectsRowsThatCanNeverBePublished(t *testing.T) {
	tests := []struct {
		name   string
		row    row
		reject string // substring; "" means publishable
		header map[string][]string
	}{
		{"valid", row{id: "e1", eventType: "order.created", payload: []byte("{}")}, "", nil},
		{"valid with headers", row{id: "e1", eventType: "order.created", headers: []byte(`{"Content-Type":"text/plain","X-A":["1","2"]}`)}, "",
			map[string][]string{"Content-Type": {"text/plain"}, "X-A": {"1", "2"}}},
		{"null headers", row{id: "e1", eventType: "a", headers: []byte("null")}, "", nil},
		{"wildcard type", row{id: "e1", eventType: "order.*"}, "event_type: ", nil},
		{"empty token", row{id: "e1", eventType: "order..created"}, "event_type: ", nil},
		{"space in type", row{id: "e1", eventType: "order created"}, "event_type: ", nil},
		{"hookjet's own type", row{id: "e1", eventType: "hookjet.endpoint.disabled"}, "event_type: is reserved", nil},
		{"payload too large", row{id: "e1", eventType: "a", payload: make([]byte, 11)}, "payload of 11 bytes exceeds security.max_payload_bytes (10)", nil},
		{"id with space", row{id: "e 1", eventType: "a"}, "id contains white space", nil},
		{"id too long", row{id: strings.Repeat("x", 256), eventType: "a"}, "id is longer", nil},
		{"headers not an object", row{id: "e1", eventType: "a", headers: []byte(`[1]`)}, "JSON object", nil},
		{"header number", row{id: "e1", eventType: "a", headers: []byte(`{"X":1}`)}, "want a string", nil},
		{"header overrides msg id", row{id: "e1", eventType: "a", headers: []byte(`{"nats-msg-id":"other"}`)}, "set by hookjet", nil},
		{"header with CRLF", row{id: "e1", eventType: "a", headers: []byte(`{"X":"a\r\nB: c"}`)}, "control characters", nil},
		{"bad header name", row{id: "e1", eventType: "a", headers: []byte(`{"X Y":"1"}`)}, "not a valid token", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := message(tt.row, 10)
			if tt.reject == "" && m.Reject != "" || !strings.Contains(m.Reject, tt.reject) {
				t.Fatalf("Reject = %q, want %q", m.Reject, tt.reject)
			}
			if tt.reject == "" && !reflect.DeepEqual(m.Header, tt.header) {
				t.Fatalf("Header = %v, want %v", m.Header, tt.header)
			}
			if m.ID != tt.row.id || m.EventType != tt.row.eventType {
				t.Fatalf("message %+v lost the row's id or type", m)
			}
		})
	}
}

// A row's tenant column becomes the event's tenant; a tenant that is not
// one (config.CheckTenant, or an empty string) rejects the row with a reason
// naming the column, and is never carried; NULL is no tenant.
func TestMessageCarriesTheRowsTenant(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name         string
		row          row
		tenant, want string // want: substring of Reject; "" means publishable
	}{
		{"tenant", row{id: "e1", eventType: "a", tenant: str("acme")}, "acme", ""},
		{"null", row{id: "e1", eventType: "a"}, "", ""},
		{"upper case", row{id: "e1", eventType: "a", tenant: str("Acme")}, "", `tenant: "Acme" may contain only`},
		{"dot", row{id: "e1", eventType: "a", tenant: str("acme.eu")}, "", "tenant: "},
		{"empty", row{id: "e1", eventType: "a", tenant: str("")}, "", "tenant: is empty (NULL for an event without a tenant)"},
		{"too long", row{id: "e1", eventType: "a", tenant: str(strings.Repeat("a", 1025))}, "", "tenant: must be at most 1024 bytes"},
		{"valid tenant, bad type", row{id: "e1", eventType: "a.*", tenant: str("acme")}, "acme", "event_type: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := message(tt.row, 10)
			if tt.want == "" && m.Reject != "" || !strings.Contains(m.Reject, tt.want) {
				t.Fatalf("Reject = %q, want %q", m.Reject, tt.want)
			}
			if m.Tenant != tt.tenant {
				t.Fatalf("Tenant = %q, want %q", m.Tenant, tt.tenant)
			}
		})
	}
}

// A row's ordering_key column becomes the event's ordering key; a key that
// is not one (publish.CheckKey, or an empty string) rejects the row with a
// reason naming the column, and is never carried; NULL is no key. A valid
// key stays on the dead letter of a row rejected for another reason.
func TestMessageCarriesTheRowsOrderingKey(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name      string
		row       row
		key, want string // want: substring of Reject; "" means publishable
	}{
		{"key", row{id: "e1", eventType: "a", key: str("customer 7/ü")}, "customer 7/ü", ""},
		{"null", row{id: "e1", eventType: "a"}, "", ""},
		{"with a tenant", row{id: "e1", eventType: "a", tenant: str("acme"), key: str("c-7")}, "c-7", ""},
		{"empty", row{id: "e1", eventType: "a", key: str("")}, "", "ordering_key: is empty (NULL for an event without a key)"},
		{"too long", row{id: "e1", eventType: "a", key: str(strings.Repeat("k", 256))}, "", "ordering_key: must be at most 255 bytes"},
		{"control character", row{id: "e1", eventType: "a", key: str("a\nb")}, "", "ordering_key: contains control characters"},
		{"valid key, bad type", row{id: "e1", eventType: "a.*", key: str("c-7")}, "c-7", "event_type: "},
		{"valid key, bad tenant", row{id: "e1", eventType: "a", tenant: str("Acme"), key: str("c-7")}, "c-7", "tenant: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := message(tt.row, 10)
			if tt.want == "" && m.Reject != "" || !strings.Contains(m.Reject, tt.want) {
				t.Fatalf("Reject = %q, want %q", m.Reject, tt.want)
			}
			if m.Key != tt.key {
				t.Fatalf("Key = %q, want %q", m.Key, tt.key)
			}
		})
	}
}
