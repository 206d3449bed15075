// Package proxytest starts Debian's tinyproxy as a throw-away egress proxy
// for tests. Without tinyproxy a test is skipped, except under CI (CI
// set), where it fails: CI must never skip (.ci/run installs it).
package proxytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hookjet/hookjet/internal/freeport"
)

// Proxy is a running tinyproxy.
type Proxy struct {
	// URL is the proxy's http://127.0.0.1:port URL.
	URL *url.URL
	log string
}

// binary returns tinyproxy's path, or "" when it is not installed.
func binary() string {
	for _, p := range []string{"/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("tinyproxy"); err == nil {
		return p
	}
	return ""
}

// Start runs tinyproxy on a loopback port, allowing clients from
// 127.0.0.1 and CONNECT to any port, until the test ends. extra holds more
// lines of tinyproxy's configuration, e.g. "BasicAuth user password".
func Start(t testing.TB, extra ...string) *Proxy {
	t.Helper()
	bin := binary()
	if bin == "" {
		msg := "proxytest: tinyproxy is not installed (apt-get install tinyproxy)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// Not t.TempDir: its parent is private to this user, and tinyproxy
	// started as root runs as nobody, which must write its log here.
	dir, err := os.MkdirTemp("", "proxytest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	logPath := filepath.Join(dir, "tinyproxy.log")
	var lastErr error
	for range 5 {
		port, err := freeport.Port()
		if err != nil {
			t.Fatal(err)
		}
		conf := fmt.Sprintf(`Port %d
Listen 127.0.0.1
Timeout 30
MaxClients 64
Allow 127.0.0.1
LogFile "%s"
LogLevel Info
PidFile "%s"
DisableViaHeader Yes
`, port, logPath, filepath.Join(dir, "tinyproxy.pid"))
		for _, l := range extra {
			conf += l + "\n"
		}
		if os.Geteuid() == 0 {
			conf += "User nobody\nGroup nogroup\n"
			if err := os.Chmod(dir, 0o777); err != nil { //nolint:gosec // a test's own directory, for the unprivileged proxy's log
				t.Fatal(err)
			}
		}
		confPath := filepath.Join(dir, "tinyproxy.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil { //nolint:gosec // read by the unprivileged proxy
			t.Fatal(err)
		}
		var out bytes.Buffer
		var mu sync.Mutex
		cmd := exec.Command(bin, "-d", "-c", confPath)
		cmd.Stdout, cmd.Stderr = lockedWriter{&mu, &out}, lockedWriter{&mu, &out}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait() // the proxy is killed at the end: its exit status says so
			close(done)
		}()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err := waitListening(addr, done); err != nil {
			mu.Lock()
			lastErr = fmt.Errorf("%w: %s", err, out.String())
			mu.Unlock()
			_ = cmd.Process.Kill()
			<-done
			continue
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
		})
		return &Proxy{URL: &url.URL{Scheme: "http", Host: addr}, log: logPath}
	}
	t.Fatalf("proxytest: tinyproxy did not start: %v", lastErr)
	return nil
}

// waitListening waits until addr accepts connections or the process ends.
func waitListening(addr string, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		var d net.Dialer
		if c, err := d.DialContext(ctx, "tcp", addr); err == nil {
			return c.Close()
		}
		select {
		case <-done:
			return errors.New("tinyproxy exited")
		case <-ctx.Done():
			return errors.New("tinyproxy did not listen within 10s")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Log returns what tinyproxy logged so far (each request line it read,
// e.g. "CONNECT 127.0.0.1:443 HTTP/1.1").
func (p *Proxy) Log() string {
	b, _ := os.ReadFile(p.log) // empty until the proxy writes
	return string(b)
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
