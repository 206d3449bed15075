package cli

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hookjet status reads admin.listen and admin.token from the server's file;
// the server's inbound secret STRIPE_WHSEC, unset where the operator runs
// the command, is none of its business. An unset admin.token is, unless
// --token stands in for it.
func TestStatusRunsWithoutTheServersOtherSecrets(t *testing.T) {
	stub := &apiStub{}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "hookjet.yaml")
	file := "admin:\n  token: env:ADMIN_TOKEN\ninbound:\n  listen: 127.0.0.1:8090\n  sources:\n    - id: stripe\n      scheme: stripe\n      secrets: [env:STRIPE_WHSEC]\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(env map[string]string, args ...string) (int, string) {
		var out, errOut strings.Builder
		err := Run(t.Context(), append(args, "--config", path), func(k string) string { return env[k] }, &out, &errOut)
		return ExitCode(err, &errOut), errOut.String()
	}
	if code, stderr := run(map[string]string{"ADMIN_TOKEN": "t"}, "status", "--json", "--admin", srv.URL); code != 0 {
		t.Errorf("status with ADMIN_TOKEN set, STRIPE_WHSEC unset: exit %d: %s", code, stderr)
	}
	code, stderr := run(nil, "status", "--json", "--admin", srv.URL)
	if code != 2 || !strings.Contains(stderr, "admin.token") || strings.Contains(stderr, "STRIPE_WHSEC") {
		t.Errorf("status with ADMIN_TOKEN unset: exit %d %q, want 2 naming admin.token only", code, stderr)
	}
	if code, stderr := run(nil, "status", "--json", "--admin", srv.URL, "--token", "t"); code != 0 {
		t.Errorf("status --token with ADMIN_TOKEN unset: exit %d: %s", code, stderr)
	}
	code, stderr = run(map[string]string{"ADMIN_TOKEN": "t"}, "inbound", "test", "stripe", "--url", srv.URL)
	if code != 2 || !strings.Contains(stderr, "inbound.sources[0].secrets[0]") {
		t.Errorf("inbound test of the source whose secret is unset: exit %d %q, want 2 naming the key", code, stderr)
	}
}
