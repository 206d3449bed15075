package publish

import (
	"strings"
	"testing"
)

// KeyOf reads the key in any case of the header's name, and ignores one
// CheckKey refuses.
func TestKeyOf(t *testing.T) {
	tests := []struct {
		name string
		h    map[string][]string
		want string
	}{
		{"none", map[string][]string{"Nats-Msg-Id": {"e1"}}, ""},
		{"nil", nil, ""},
		{"canonical", map[string][]string{HeaderKey: {"customer-7", "other"}}, "customer-7"},
		{"any case", map[string][]string{"hookjet-ordering-key": {"c 8/ü"}}, "c 8/ü"},
		{"too long", map[string][]string{HeaderKey: {strings.Repeat("k", MaxKeyLen+1)}}, ""},
		{"control character", map[string][]string{HeaderKey: {"a\tb"}}, ""},
		{"empty", map[string][]string{HeaderKey: {""}}, ""},
		{"no values", map[string][]string{HeaderKey: {}}, ""},
	}
	for _, tt := range tests {
		if got := KeyOf(tt.h); got != tt.want {
			t.Errorf("%s: KeyOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}
