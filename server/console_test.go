package server

import (
	"testing"

	"github.com/hookjet/hookjet/config"
)

// The portal hides response excerpts wherever a delivery may have reached
// a private or loopback address.
func TestPrivateResponsesWhereThePrivateNetworkIsOpen(t *testing.T) {
	closed := config.Security{}
	open := config.Security{AllowPrivateNetworks: true}
	cidrs := config.Security{AllowCIDRs: []string{"10.0.0.0/8"}}
	for _, tt := range []struct {
		sec  config.Security
		url  string
		want bool
	}{
		{closed, "http://127.0.0.1:9000/hook", false}, // refused at dial time: no response at all
		{closed, "https://hooks.example.com/x", false},
		{open, "http://127.0.0.1:9000/hook", true},
		{open, "http://[::1]:9000/hook", true},
		{open, "https://hooks.example.com/x", true}, // a name may resolve inside
		{open, "https://93.184.216.34/x", false},
		{cidrs, "http://10.1.2.3/x", true},
		{cidrs, "https://93.184.216.34/x", false},
	} {
		if got := privateResponses(tt.sec, tt.url); got != tt.want {
			t.Errorf("privateResponses(%+v, %s) = %v, want %v", tt.sec, tt.url, got, tt.want)
		}
	}
}
