package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hookjet/hookjet/config"
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
		if err := checkEnv(env); err != nil {
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

// checkEnv refuses HOOKJET_* variables that are neither configuration keys
// (config.EnvVars) nor one of otherEnv, naming each.
func checkEnv(env map[string]string) error {
	known := map[string]bool{}
	for _, n := range append(config.EnvVars(), otherEnv...) {
		known[n] = true
	}
	var unknown []string
	for k := range env {
		if strings.HasPrefix(k, "HOOKJET_") && !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return usagef("unknown environment variable %s: not a configuration key (see the Configuration section of the README: HOOKJET_<SECTION>_<KEY>, such as HOOKJET_ADMIN_TOKEN)%s",
		strings.Join(unknown, ", "), suggest(unknown, known))
}

// suggest names the known variables the unknown ones are closest to.
func suggest(unknown []string, known map[string]bool) string {
	var out []string
	for _, u := range unknown {
		best, dist := "", 4
		for k := range known {
			if d := editDistance(u, k); d < dist || d == dist && k < best {
				best, dist = k, d
			}
		}
		if best != "" {
			out = append(out, u+" -> "+best)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", strings.Join(out, ", "))
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

const versionHelp = `hookjet version

Prints hookjet's version.`

// runVersion is `hookjet version`.
func runVersion(args []string, stdout io.Writer) error {
	fs := newFlags("version", versionHelp, stdout)
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "hookjet", Version)
	return nil
}
