package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookjet/hookjet/internal/freeport"
)

// endpoint is one endpoint of the soak's config, shared by every hookjet
// process.
type endpoint struct {
	id       string
	patterns []string
}

// endpoints: each event type matches a different set of them.
var endpoints = []endpoint{
	{id: "all", patterns: []string{">"}},
	{id: "orders", patterns: []string{"order.*"}},
	{id: "billing", patterns: []string{"order.paid", "invoice.>"}},
}

// eventTypes are published round-robin.
var eventTypes = []string{"order.created", "order.paid", "invoice.sent", "user.signup"}

// The signing secret of every endpoint, and the shared key that seals API
// endpoints' secrets (every process must read the others' KV entries).
const (
	endpointSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secretKey      = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
)

// hookjetProc is one `hookjet serve` child process with its own data
// directory and admin port; it is restarted with the same config.
type hookjetProc struct {
	name, binary, dir, config, logPath, admin string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	exited error // the last run's exit
}

// hookjetConfig renders a process's config: NATS through its proxies, R3
// streams, quick retries so that the quiet period sees them through.
func hookjetConfig(dir, natsURL, admin string, rec *receiver, maxInFlight int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "data_dir: %s\nnats:\n  url: %q\nstreams:\n  replicas: 3\n", dir, natsURL)
	// Small reservations: every node reserves each R3 stream's max_bytes
	// against its disk, and the defaults (35 GiB in all, for production)
	// refuse to start where the three nodes share less than ~50 GB free.
	b.WriteString("  max_bytes: 268435456\n  tasks_max_bytes: 268435456\n  dlq_max_bytes: 67108864\n")
	fmt.Fprintf(&b, "admin:\n  listen: %s\nlog:\n  format: json\n  level: info\n  max_bytes: 67108864\n", admin)
	fmt.Fprintf(&b, "security:\n  allow_private_networks: true\n  secret_key: %s\n", secretKey)
	b.WriteString("worker:\n  shutdown_grace: 5s\n")
	fmt.Fprintf(&b, "defaults:\n  timeout: 5s\n  max_in_flight: %d\n", maxInFlight)
	b.WriteString("  retry: {base: 500ms, cap: 5s, max_attempts: 1000, max_age: 24h}\n")
	b.WriteString("  breaker: {failure_threshold: 10, cooldown: 2s, max_cooldown: 10s}\n")
	b.WriteString("endpoints:\n")
	for _, ep := range endpoints {
		fmt.Fprintf(&b, "  - id: %s\n    url: %s\n    secrets: [%s]\n    events: [%s]\n",
			ep.id, rec.url(ep.id), endpointSecret, quoteAll(ep.patterns))
	}
	return b.String()
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func newHookjetProc(name, binary, work, natsURL string, rec *receiver, maxInFlight int) (*hookjetProc, error) {
	dir := filepath.Join(work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	p := &hookjetProc{
		name: name, binary: binary, dir: dir, admin: fmt.Sprintf("127.0.0.1:%d", port),
		config: filepath.Join(work, name+".yaml"), logPath: filepath.Join(work, name+".log"),
	}
	if err := os.WriteFile(p.config, []byte(hookjetConfig(dir, natsURL, p.admin, rec, maxInFlight)), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

// start starts the process and waits until /readyz answers 200.
func (p *hookjetProc) start(ctx context.Context, timeout time.Duration) error {
	if err := p.launch(); err != nil {
		return err
	}
	return p.waitReady(ctx, timeout)
}

func (p *hookjetProc) launch() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.name)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.binary, "serve", "--config", p.config)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		_ = logf.Close()
		p.mu.Lock()
		if p.cmd == cmd {
			p.cmd, p.exited = nil, err
		}
		p.mu.Unlock()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// waitReady polls /readyz until it answers 200, the process exits or
// timeout passes.
func (p *hookjetProc) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	var last error
	for {
		p.mu.Lock()
		running, exited := p.cmd != nil, p.exited
		p.mu.Unlock()
		if !running {
			if exited == nil {
				exited = errors.New("exit status 0")
			}
			return fmt.Errorf("%s exited: %w (see %s)", p.name, exited, p.logPath)
		}
		resp, err := client.Get("http://" + p.admin + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("readyz %d", resp.StatusCode)
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %w", p.name, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// signal sends sig to the running process.
func (p *hookjetProc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s: not running", p.name)
	}
	return p.cmd.Process.Signal(sig)
}

// kill sends SIGKILL and waits for the process to exit.
func (p *hookjetProc) kill() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-done
	return nil
}

// terminate asks the process to stop (SIGCONT first, in case it is paused,
// then SIGTERM) and kills it if it has not exited after grace.
func (p *hookjetProc) terminate(grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = p.kill()
	}
}
