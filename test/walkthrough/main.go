package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookjet/hookjet/internal/freeport"
)

// pages is the repeatable -readme flag.
type pages []string

func (p *pages) String() string { return strings.Join(*p, ",") }

func (p *pages) Set(v string) error {
	*p = append(*p, v)
	return nil
}

func main() {
	var names pages
	flag.Var(&names, "readme", "a page whose walkthrough blocks to run (repeatable; globs allowed; default README.md)")
	makefile := flag.String("makefile", "Makefile", "the Makefile whose run recipe \"make run\" stands for")
	wait := flag.Duration("wait", 20*time.Second, "how long read-only commands are repeated until their output matches")
	flag.Parse()
	if len(names) == 0 {
		names = pages{"README.md"}
	}
	files, err := expandPages(names)
	var checked []string
	if err == nil {
		checked, err = run(files, *makefile, *wait)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "walkthrough:", err)
		os.Exit(1)
	}
	fmt.Printf("walkthrough: every command printed what %s shows\n", strings.Join(checked, ", "))
}

// expandPages resolves the -readme values to files, globs in order (each
// file once), and fails on a name that matches nothing.
func expandPages(names []string) ([]string, error) {
	var files []string
	seen := map[string]bool{}
	for _, n := range names {
		matches := []string{n}
		if strings.ContainsAny(n, "*?[") {
			var err error
			if matches, err = filepath.Glob(n); err != nil {
				return nil, fmt.Errorf("-readme %s: %w", n, err)
			}
			if len(matches) == 0 {
				return nil, fmt.Errorf("-readme %s: no file matches", n)
			}
		}
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				files = append(files, m)
			}
		}
	}
	return files, nil
}

// step is one "$ command" and the lines it must print.
type step struct {
	cmd  string
	want []string
	path string // the page
	line int    // in the page
}

// walk is the walkthrough of one or more pages.
type walk struct {
	pages    []string // those with walkthrough blocks
	server   string   // terminal 1's command
	receiver step     // terminal 2's command and what it prints
	steps    []step   // terminal 3's, of every page in order
}

// run runs the walkthrough of files and returns the pages it checked.
func run(files []string, makefile string, wait time.Duration) ([]string, error) {
	w, err := parsePages(files)
	if err != nil {
		return nil, err
	}
	return w.pages, w.run(makefile, wait)
}

func (w walk) run(makefile string, wait time.Duration) error {
	var err error
	if w.server, err = expandMake(w.server, makefile); err != nil {
		return err
	}
	env, cleanup, err := newEnv()
	if err != nil {
		return err
	}
	defer cleanup()
	server, err := env.start(env.subst(w.server), "terminal 1")
	if err != nil {
		return err
	}
	defer server.stop()
	if err := env.waitReady(server); err != nil {
		return err
	}
	receiver, err := env.start(env.subst(w.receiver.cmd), "terminal 2")
	if err != nil {
		return err
	}
	defer func() { receiver.stop() }()
	if err := waitListening(env.recv, receiver); err != nil {
		return err
	}
	checked := false
	for _, s := range w.steps {
		switch {
		case strings.Contains(s.cmd, "Ctrl-C in terminal 2"):
			receiver.stop()
			if !checked {
				if err := compare(env.substAll(w.receiver.want), receiver.output()); err != nil {
					return fmt.Errorf("%s:%d: terminal 2 (%s) printed something else: %w", w.receiver.path, w.receiver.line, w.receiver.cmd, err)
				}
				checked = true
			}
		case strings.Contains(s.cmd, "again in terminal 2"):
			if receiver, err = env.start(env.subst(w.receiver.cmd), "terminal 2"); err != nil {
				return err
			}
			if err := waitListening(env.recv, receiver); err != nil {
				return err
			}
		case strings.HasPrefix(s.cmd, "#"):
		default:
			if err := env.check(s, wait); err != nil {
				return fmt.Errorf("%s:%d: %w\n(terminal 1 log:\n%s)", s.path, s.line, err, server.output())
			}
		}
	}
	return nil
}

// marker introduces a block of the walkthrough.
var marker = regexp.MustCompile(`^<!-- walkthrough: terminal ([123]) -->$`)

// parsePages reads the walkthrough's blocks from every page in order:
// terminal 1 and 2 from exactly one of them, terminal 3 from all.
func parsePages(files []string) (walk, error) {
	var w walk
	var serverAt, receiverAt string
	for _, path := range files {
		p, err := parsePage(path)
		if err != nil {
			return walk{}, err
		}
		if p.server != "" {
			if serverAt != "" {
				return walk{}, fmt.Errorf("%s: a second terminal 1 block (the first is in %s)", path, serverAt)
			}
			w.server, serverAt = p.server, path
		}
		if p.receiver.cmd != "" {
			if receiverAt != "" {
				return walk{}, fmt.Errorf("%s: a second terminal 2 block (the first is in %s)", path, receiverAt)
			}
			w.receiver, receiverAt = p.receiver, path
		}
		w.steps = append(w.steps, p.steps...)
		if p.server != "" || p.receiver.cmd != "" || len(p.steps) > 0 {
			w.pages = append(w.pages, path)
		}
	}
	if w.server == "" || w.receiver.cmd == "" || len(w.steps) == 0 {
		return walk{}, fmt.Errorf("%s: no walkthrough found (terminal 1, 2 and 3 blocks)", strings.Join(files, ", "))
	}
	return w, nil
}

// parsePage reads the walkthrough's blocks from the page at path; a page
// without any has none.
func parsePage(path string) (walk, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return walk{}, err
	}
	lines := strings.Split(string(data), "\n")
	var w walk
	for i := 0; i < len(lines); i++ {
		m := marker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			return walk{}, fmt.Errorf("%s:%d: a walkthrough marker must be followed by a fenced block", path, i+1)
		}
		start := i + 2
		end := start
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		steps := parseBlock(lines[start:end], path, start+1)
		switch m[1] {
		case "1":
			for _, l := range lines[start:end] {
				if cmd, _, _ := strings.Cut(l, "#"); strings.TrimSpace(cmd) != "" {
					w.server = strings.TrimSpace(cmd)
				}
			}
		case "2":
			if len(steps) != 1 {
				return walk{}, fmt.Errorf("%s:%d: terminal 2's block must hold one command", path, start)
			}
			w.receiver = steps[0]
		case "3":
			w.steps = append(w.steps, steps...)
		}
		i = end
	}
	return w, nil
}

// parseBlock splits a console block into "$ command" steps and their output.
func parseBlock(lines []string, path string, first int) []step {
	var steps []step
	for i, l := range lines {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			steps = append(steps, step{cmd: strings.TrimSpace(cmd), path: path, line: first + i})
			continue
		}
		if len(steps) > 0 {
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
		}
	}
	return steps
}

// expandMake replaces "make run" with the Makefile's run recipe.
func expandMake(cmd, makefile string) (string, error) {
	if cmd != "make run" {
		return cmd, nil
	}
	data, err := os.ReadFile(makefile)
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "run:") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
			return strings.TrimSpace(lines[i+1]), nil
		}
	}
	return "", fmt.Errorf("%s: no run recipe", makefile)
}

// env is where the walkthrough runs: free ports, a temporary directory.
type env struct {
	dir               string
	nats, admin, recv string // free loopback addresses
	inbound           string
	config            string // the copy of examples/hookjet.yaml
	vars              []string
	replacer          *strings.Replacer
}

func newEnv() (*env, func(), error) {
	dir, err := os.MkdirTemp("", "hookjet-walkthrough-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	e := &env{dir: dir, config: filepath.Join(dir, "hookjet.yaml")}
	for _, p := range []*string{&e.nats, &e.admin, &e.recv, &e.inbound} {
		if *p, err = freeport.Addr(); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	e.replacer = strings.NewReplacer("127.0.0.1:4222", e.nats, "127.0.0.1:8089", e.admin, "127.0.0.1:9000", e.recv,
		"127.0.0.1:8090", e.inbound, "examples/hookjet.yaml", e.config)
	example, err := os.ReadFile("examples/hookjet.yaml")
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	if err := os.WriteFile(e.config, []byte(e.replacer.Replace(string(example))), 0o600); err != nil {
		cleanup()
		return nil, nil, err
	}
	bin, _ := filepath.Abs("bin")
	sep := string(os.PathListSeparator)
	e.vars = append(os.Environ(), "NATS_URL=nats://"+e.nats, "HOOKJET_DATA_DIR="+filepath.Join(dir, "data"),
		"HOOKJET_NATS_LISTEN="+e.nats, "HOOKJET_ADMIN_LISTEN="+e.admin,
		"PATH="+bin+sep+filepath.Join(bin, "tools")+sep+os.Getenv("PATH"))
	return e, cleanup, nil
}

func (e *env) subst(s string) string { return e.replacer.Replace(s) }

func (e *env) substAll(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = e.subst(l)
	}
	return out
}

// proc is a background command and what it printed.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	once sync.Once
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start runs line with bash in the background, as its own process group.
func (e *env) start(line, name string) (*proc, error) {
	p := &proc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command("bash", "-c", "exec "+line)
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = e.vars, p, p
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, line, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop interrupts p (Ctrl-C) and waits for it, killing it after 30 s.
func (p *proc) stop() {
	p.once.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
}

// waitReady waits until the server's admin API answers /readyz with 200.
func (e *env) waitReady(server *proc) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-server.done:
			return fmt.Errorf("terminal 1 exited:\n%s", server.output())
		default:
		}
		resp, err := http.Get("http://" + e.admin + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("terminal 1 not ready after 2 minutes:\n%s", server.output())
}

// waitListening waits until p accepts connections on addr.
func waitListening(addr string, p *proc) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited:\n%s", p.name, p.output())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s does not listen on %s after 30 s:\n%s", p.name, addr, p.output())
}

// readOnly matches the commands that may be repeated until they match: a
// command that only reads, with flags at most ("hookjet endpoints" lists,
// "hookjet endpoints add ..." does not).
var readOnly = regexp.MustCompile(`hookjet (status|endpoints|endpoints (show|attempts) \S+|dlq (list|stats)|events show \S+)( -.*)?$`)

// check runs s and compares what it prints, repeating read-only commands.
func (e *env) check(s step, wait time.Duration) error {
	line := e.subst(s.cmd)
	want := e.substAll(s.want)
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", line)
		cmd.Env = e.vars
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", s.cmd, err, out)
		}
		cerr := compare(want, string(out))
		if cerr == nil {
			return nil
		}
		if !readOnly.MatchString(line) || time.Now().After(deadline) {
			return fmt.Errorf("%s printed something else: %w", s.cmd, cerr)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// compare matches got against the expected lines, with "..." wildcards.
func compare(want []string, got string) error {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(got))
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), " "))
	}
	for len(want) > 0 && strings.TrimSpace(want[len(want)-1]) == "" {
		want = want[:len(want)-1]
	}
	if match(want, lines) {
		return nil
	}
	return errors.New("want\n  " + strings.Join(want, "\n  ") + "\ngot\n  " + strings.Join(lines, "\n  "))
}

// match reports whether lines match want, a line "..." matching any number
// of lines.
func match(want, lines []string) bool {
	if len(want) == 0 {
		return len(lines) == 0
	}
	if strings.TrimSpace(want[0]) == "..." {
		for i := 0; i <= len(lines); i++ {
			if match(want[1:], lines[i:]) {
				return true
			}
		}
		return false
	}
	return len(lines) > 0 && lineMatches(want[0], lines[0]) && match(want[1:], lines[1:])
}

// lineMatches matches one line, "..." standing for any text.
func lineMatches(want, got string) bool {
	parts := strings.Split(strings.TrimRight(want, " "), "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}
