package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hookjet/hookjet/internal/freeport"
	"github.com/hookjet/hookjet/internal/testkit"
)

// startupEndpoints is the number of config endpoints startup100k starts with.
const startupEndpoints = 100_000

// startupScenarios measure the built binary (go build ./cmd/hookjet, run
// as `hookjet serve`) with 100,000 endpoints in its config file, in both
// sync modes (nats.sync: always, the default, and nats.sync: 2m): the time
// from exec to a 200 from /readyz, and the process's own memory from
// /proc/<pid>/status (VmRSS at ready and after an idle window, VmHWM).
// Each mode starts twice: on an empty data_dir (every endpoint new to the
// bucket HOOKJET_CONFIG_ENDPOINTS), then again on the same data_dir (the
// bucket holds them already).
func (b *bench) startupScenarios(ctx context.Context) map[string][]runFunc {
	var runs []runFunc
	for _, mode := range []struct{ name, sync string }{{"startup100k", ""}, {"startup100kfast", fastSync}} {
		var dir string
		runs = append(runs,
			func() (*result, error) {
				var err error
				if dir, err = os.MkdirTemp("", "hookjet-startup-"); err != nil {
					return nil, err
				}
				return b.startup(ctx, mode.name, mode.sync, dir, false)
			},
			func() (*result, error) {
				defer func() { _ = os.RemoveAll(dir) }()
				return b.startup(ctx, mode.name+"-restart", mode.sync, dir, true)
			})
	}
	return map[string][]runFunc{"startup100k": runs}
}

// startupBinary builds cmd/hookjet once per bench run.
func (b *bench) startupBinary(ctx context.Context) (string, error) {
	if b.hookjetBin != "" {
		return b.hookjetBin, nil
	}
	dir, err := os.MkdirTemp("", "hookjet-bench-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "hookjet")
	b.say("startup100k: building ./cmd/hookjet")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/hookjet")
	cmd.Stdout, cmd.Stderr = b.progress, b.progress
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/hookjet: %w", err)
	}
	b.hookjetBin = bin
	return bin, nil
}

// startup starts the binary on dir once and measures it; restart says the
// data_dir is the previous run's.
func (b *bench) startup(ctx context.Context, name, sync, dir string, restart bool) (*result, error) {
	bin, err := b.startupBinary(ctx)
	if err != nil {
		return nil, err
	}
	mode := "nats.sync: always (the default)"
	if sync != "" {
		mode = "nats.sync: " + sync
	}
	data := "an empty data_dir"
	if restart {
		data = "the previous run's data_dir (the endpoints already shared)"
	}
	r := &result{Name: name, Endpoints: startupEndpoints,
		Description: fmt.Sprintf("the built binary, %d endpoints in its config file, %s, %s: exec to /readyz 200; VmRSS of the process", startupEndpoints, mode, data)}
	cfgPath, admin, err := writeStartupConfig(dir, sync)
	if err != nil {
		return r, err
	}
	out := &testkit.LockedBuffer{}
	cmd := exec.Command(bin, "serve", "--config", cfgPath)
	cmd.Env = os.Environ()
	for key, v := range benchLimits {
		cmd.Env = append(cmd.Env, key+"="+v)
	}
	cmd.Stdout, cmd.Stderr = out, out
	b.say("%s: starting the binary with %d endpoints", name, startupEndpoints)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			if err := <-done; err != nil {
				b.say("%s: killed: %v", name, err)
			}
		}
	}()
	err = waitReady(ctx, admin, done, 5*time.Minute)
	r.StartupSeconds = round(time.Since(start).Seconds(), 3)
	r.SlowConsumer = int64(strings.Count(out.String(), "slow consumer"))
	if err != nil { // a result, not an error: the other runs still run
		r.Notes = append(r.Notes, fmt.Sprintf("never ready (%v after %.1f s): %s", err, r.StartupSeconds, tail(out.String(), 5)))
		b.say("%s: %s", name, r.Notes[0])
		return r, nil
	}
	pid := cmd.Process.Pid
	r.PeakRSSMB = round(float64(procStatus(strconv.Itoa(pid))["VmRSS"])/1e6, 1) // at ready
	r.PeakRSSPerScenario = true
	idle := b.p.scaleIdle
	select {
	case <-time.After(idle):
	case <-ctx.Done():
		return r, ctx.Err()
	}
	st := procStatus(strconv.Itoa(pid))
	r.IdleRSSMB = round(float64(st["VmRSS"])/1e6, 1)
	r.RSSAnonMB, r.RSSFileMB = round(float64(st["RssAnon"])/1e6, 1), round(float64(st["RssFile"])/1e6, 1)
	peak := round(float64(st["VmHWM"])/1e6, 1)
	r.StartupRSSMB, r.PeakRSSMB = r.PeakRSSMB, peak
	// A first start stores its endpoints for other processes in the
	// background; what the process holds once that is over and the
	// server's caches have expired is sampled later (reported, not checked).
	select {
	case <-time.After(settleAfter - idle):
	case <-ctx.Done():
		return r, ctx.Err()
	}
	r.SettledRSSMB = round(float64(procStatus(strconv.Itoa(pid))["VmRSS"])/1e6, 1)
	r.SlowConsumer = int64(strings.Count(out.String(), "slow consumer"))
	r.Errors = int64(strings.Count(out.String(), `"level":"ERROR"`))
	stop := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return r, err
	}
	select {
	case err := <-done:
		if err != nil {
			return r, fmt.Errorf("exit after SIGTERM: %w\n%s", err, tail(out.String(), 20))
		}
	case <-time.After(2 * time.Minute):
		return r, errors.New("no exit within 2 minutes of SIGTERM")
	}
	r.ShutdownSeconds = round(time.Since(stop).Seconds(), 3)
	r.Complete = r.SlowConsumer == 0
	b.say("%s: ready after %.2f s, VmRSS %.0f MB at ready, %.0f MB after %s idle, %.0f MB after %s, peak %.0f MB", name, r.StartupSeconds, r.StartupRSSMB, r.IdleRSSMB, idle, r.SettledRSSMB, settleAfter, peak)
	return r, nil
}

// writeStartupConfig writes the config file of startup100k into dir (kept
// across the two starts of a mode) and returns its path and the admin
// address. Every endpoint has its own event type and points at a closed
// port: nothing is published.
func writeStartupConfig(dir, sync string) (path, admin string, err error) {
	natsPort, err := freeport.Port()
	if err != nil {
		return "", "", err
	}
	adminPort, err := freeport.Port()
	if err != nil {
		return "", "", err
	}
	admin = fmt.Sprintf("127.0.0.1:%d", adminPort)
	var w bytes.Buffer
	fmt.Fprintf(&w, "data_dir: %s\nnats:\n  listen: 127.0.0.1:%d\n", filepath.Join(dir, "data"), natsPort)
	if sync != "" {
		fmt.Fprintf(&w, "  sync: %s\n", sync)
	}
	fmt.Fprintf(&w, "admin:\n  listen: %s\nlog:\n  level: warn\n  format: json\nsecurity:\n  allow_private_networks: true\n", admin)
	w.WriteString("endpoints:\n")
	for i := range startupEndpoints {
		fmt.Fprintf(&w, "  - id: e%d\n    url: http://127.0.0.1:9/e/%d\n    secrets: [%s]\n    events: [%q]\n", i, i, secret, eventType(i))
	}
	path = filepath.Join(dir, "hookjet.yaml")
	return path, admin, os.WriteFile(path, w.Bytes(), 0o600)
}

// waitReady polls /readyz until it answers 200, the process exits, or
// bound passes.
func waitReady(ctx context.Context, admin string, exited <-chan error, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("exited before ready: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := client.Get("http://" + admin + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %s", bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settleAfter is when, after ready, startup100k samples VmRSS a second
// time: past the background store of a first start and the embedded
// server's cache expiry.
const settleAfter = 40 * time.Second

// startupChecks are startup100k's targets in each sync mode, first start
// and restart: ready within 10 s, idle VmRSS at most 300 MB, and no
// subscription dropping messages.
func startupChecks(get func(string) *result) []check {
	var cs []check
	for _, name := range []string{"startup100k", "startup100k-restart", "startup100kfast", "startup100kfast-restart"} {
		r := get(name)
		ready := check{name: name + ": the binary ready with 100,000 config endpoints", goal: "<= 10 s", unit: "s", need: "startup100k"}
		rss := check{name: name + ": idle VmRSS of the binary", goal: "<= 300 MB", unit: "MB", need: "startup100k"}
		if r != nil {
			ready.value, ready.ok = r.StartupSeconds, ptr(r.Complete && r.StartupSeconds <= 10)
			ready.detail = fmt.Sprintf("%d slow consumer lines; shutdown %.2f s", r.SlowConsumer, r.ShutdownSeconds)
			rss.value, rss.ok = r.IdleRSSMB, ptr(r.IdleRSSMB <= 300)
			rss.detail = fmt.Sprintf("%.0f MB at ready, %.0f MB %s after it, peak (VmHWM) %.0f MB", r.StartupRSSMB, r.SettledRSSMB, settleAfter, r.PeakRSSMB)
		}
		cs = append(cs, ready, rss)
	}
	return cs
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
