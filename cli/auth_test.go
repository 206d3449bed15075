package cli

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/api"
)

// --auth and --auth-* build the API's auth object as a whole, --auth none
// removes it, --proxy goes as it is; show names the type, never a secret.
func TestEndpointsAuthFlags(t *testing.T) {
	stub := &apiStub{}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	bodyOf := func(req string) map[string]any {
		t.Helper()
		var got map[string]any
		if err := json.Unmarshal([]byte(strings.SplitN(req, " ", 3)[2]), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if code, _, stderr := runAgainst(t, srv, "endpoints", "add", "--url", "https://shop.example.com/", "--auth", "oauth2",
		"--auth-token-url", "https://id.example/token", "--auth-client-id", "c", "--auth-client-secret", "s",
		"--auth-scope", "a", "--auth-scope", "b", "--proxy", "none"); code != 0 {
		t.Fatalf("add: exit %d %q", code, stderr)
	}
	got := bodyOf(stub.reqs[0])
	auth, _ := got["auth"].(map[string]any)
	if auth["type"] != "oauth2" || auth["token_url"] != "https://id.example/token" || auth["client_id"] != "c" || auth["client_secret"] != "s" ||
		len(auth["scopes"].([]any)) != 2 || got["proxy"] != "none" {
		t.Errorf("add body %v", got)
	}
	if code, _, stderr := runAgainst(t, srv, "endpoints", "update", "shop", "--auth", "none"); code != 0 {
		t.Fatalf("update: exit %d %q", code, stderr)
	}
	if got := bodyOf(stub.reqs[1]); len(got) != 1 || got["auth"] != nil {
		t.Errorf("update body %v, want auth null", got)
	}
	if code, _, stderr := runAgainst(t, srv, "endpoints", "update", "shop", "--auth-token", "t"); code != 2 || !strings.Contains(stderr, "--auth TYPE") {
		t.Errorf("--auth-token without --auth: exit %d %q, want 2", code, stderr)
	}

	var out strings.Builder
	printEndpoint(&out, api.EndpointStatus{ID: "crm", Settings: &api.EndpointSettings{Auth: "oauth2", Proxy: "http://u:xxxxx@proxy:3128"}})
	if !strings.Contains(out.String(), "auth          oauth2\n") || !strings.Contains(out.String(), "proxy         http://u:xxxxx@proxy:3128\n") {
		t.Errorf("show:\n%s", out.String())
	}
}
