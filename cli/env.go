package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/server"
)

// Main is Run for a process: environ is its environment (os.Environ()).
// A HOOKJET_* variable that hookjet does not know is a usage error naming
// it, so that a misspelt override (HOOKJET_ADMIN_TOKN) never goes unnoticed.
func Main(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if len(args) > 0 && !helpOrVersion(args) {
		if err := config.CheckEnv(environ, otherEnv...); err != nil {
			return err
		}
	}
	return Run(ctx, args, func(k string) string { return env[k] }, stdout, stderr)
}

// helpOrVersion reports whether args only ask for help or the version,
// which work whatever the environment holds.
func helpOrVersion(args []string) bool {
	switch args[0] {
	case "-h", "--help", "help", "version", "--version":
		return true
	}
	return slices.Contains(args, "-h") || slices.Contains(args, "--help") || slices.Contains(args, "-help")
}

// otherEnv are the HOOKJET_* variables that are not configuration keys.
var otherEnv = []string{"HOOKJET_CONFIG", "HOOKJET_LISTEN_SECRET"}

const versionHelp = `hookjet version

Prints hookjet's version (a semantic version tag such as v1.2.3, or git
describe past one), the git commit and the build date it was built from, and
the Go release and platform.`

// runVersion is `hookjet version`.
func runVersion(args []string, stdout io.Writer) error {
	fs := newFlags("version", versionHelp, stdout)
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	b := server.Build()
	fmt.Fprintf(stdout, "hookjet %s\ncommit  %s\nbuilt   %s\ngo      %s\n", b.Version, b.Commit, b.Date, b.Go)
	return nil
}
