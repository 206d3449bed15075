package cli

import (
	"bytes"
	"github.com/hookjet/hookjet/server"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runMain runs hookjet as a process would, with environ as its environment.
func runMain(t *testing.T, environ []string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := Main(t.Context(), args, environ, &stdout, &stderr)
	code := ExitCode(err, &stderr)
	return code, stdout.String(), stderr.String()
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// A misspelt HOOKJET_* variable exits 2 naming it; the
// known ones pass.
func TestUnknownEnvironmentVariableExits2(t *testing.T) {
	code, _, stderr := runMain(t, []string{"HOOKJET_ADMIN_TOKN=abc", "HOME=/root"}, "serve")
	if code != 2 || !strings.Contains(stderr, "HOOKJET_ADMIN_TOKN") || !strings.Contains(stderr, "HOOKJET_ADMIN_TOKEN") {
		t.Fatalf("exit %d, stderr %q: want 2 naming HOOKJET_ADMIN_TOKN and suggesting HOOKJET_ADMIN_TOKEN", code, stderr)
	}
	// Known variables only: the command runs (here: a bad flag, exit 2 for that).
	code, _, stderr = runMain(t, []string{"HOOKJET_ADMIN_TOKEN=abc", "HOOKJET_CONFIG=", "HOOKJET_DEFAULTS_RETRY_MAX_ATTEMPTS=3"}, "status", "--nope")
	if code != 2 || strings.Contains(stderr, "environment") || !strings.Contains(stderr, "-nope") {
		t.Fatalf("known variables: exit %d, stderr %q", code, stderr)
	}
}

// An error of a config file names the file.
func TestBrokenConfigFileIsNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(path, []byte("admin:\n  listen: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runMain(t, nil, "serve", "--config", path)
	if code != 2 || !strings.Contains(stderr, path) {
		t.Fatalf("exit %d, stderr %q: want 2 naming %s", code, stderr, path)
	}
}

// An unknown subcommand is named as such.
func TestUnknownSubcommandIsNamed(t *testing.T) {
	for _, args := range [][]string{
		{"endpoints", "frobnicate", "shop"},
		{"dlq", "frobnicate"},
		{"outbox", "frobnicate"},
		{"event-types", "frobnicate"},
		{"frobnicate"},
	} {
		code, _, stderr := runMain(t, nil, args...)
		if code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) {
			t.Errorf("%v: exit %d, stderr %q: want 2 and unknown command \"frobnicate\"", args, code, stderr)
		}
	}
}

// --help goes to stdout and exits 0 for every command.
func TestHelpGoesToStdoutEverywhere(t *testing.T) {
	cmds := [][]string{
		{}, {"serve"}, {"publish"}, {"listen"}, {"status"}, {"endpoints"}, {"dlq"},
		{"dlq", "list"}, {"dlq", "stats"}, {"dlq", "replay"}, {"outbox"}, {"outbox", "schema"}, {"version"},
		{"event-types"}, {"event-types", "list"}, {"event-types", "show"}, {"event-types", "create"}, {"event-types", "update"}, {"event-types", "delete"},
	}
	for _, sub := range endpointCommandNames() {
		cmds = append(cmds, []string{"endpoints", sub})
	}
	for _, cmd := range cmds {
		for _, flag := range []string{"--help", "-h"} {
			args := append(append([]string{}, cmd...), flag)
			code, stdout, stderr := runMain(t, nil, args...)
			if code != 0 || stderr != "" || !strings.Contains(stdout, "hookjet") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q: want 0, the help on stdout, nothing on stderr", args, code, stdout, stderr)
			}
			if len(cmd) == 1 && cmd[0] == "version" && strings.Contains(stdout, server.Version) && !strings.Contains(stdout, "Prints") {
				t.Errorf("version --help printed the version: %q", stdout)
			}
		}
	}
}

// With no server, publish and the operator commands name the
// address they tried and the likely cause.
func TestConnectionErrorsNameTheAddress(t *testing.T) {
	addr := closedAddr(t)
	code, _, stderr := runMain(t, []string{"HOOKJET_NATS_LISTEN=" + addr}, "publish", "order.created", "--data", "{}")
	if code != 1 || !strings.Contains(stderr, "nats://"+addr) || !strings.Contains(stderr, "hookjet serve running") || !strings.Contains(stderr, "nats.url") {
		t.Errorf("publish: exit %d, stderr %q: want 1 naming nats://%s and the likely cause", code, stderr, addr)
	}
	code, _, stderr = runMain(t, nil, "status", "--admin", addr)
	if code != 1 || !strings.Contains(stderr, addr) || !strings.Contains(stderr, "hookjet serve running") || !strings.Contains(stderr, "--admin") {
		t.Errorf("status: exit %d, stderr %q: want 1 naming %s and the likely cause", code, stderr, addr)
	}
}

// publish refuses hookjet's own event types before it connects: exit 2
// naming the type and why.
func TestPublishRefusesHookjetTypes(t *testing.T) {
	code, _, stderr := runMain(t, []string{"HOOKJET_NATS_LISTEN=" + closedAddr(t)}, "publish", "hookjet.endpoint.disabled", "--data", "{}")
	if code != 2 || !strings.Contains(stderr, `"hookjet.endpoint.disabled"`) || !strings.Contains(stderr, "reserved") {
		t.Fatalf("exit %d, stderr %q: want 2 naming the type and that it is reserved", code, stderr)
	}
}
