// Package rabbittest starts throw-away RabbitMQ nodes for tests: Debian's
// rabbitmq-server (installed by .ci/run) in a temporary directory, with its
// own node name, database, logs, cookie and loopback ports (AMQP,
// distribution and epmd), so that nothing is shared with another node or
// test. Without rabbitmq-server a test is skipped with the reason, except
// under CI (CI set), where it fails: CI must never skip.
package rabbittest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookjet/hookjet/internal/freeport"
)

// ErrUnavailable is wrapped by [New] errors meaning that rabbitmq-server is
// not installed here.
var ErrUnavailable = errors.New("rabbitmq-server not available")

// bin is where Debian's package puts the server's script (the one in
// /usr/sbin switches to the rabbitmq user and its home).
var bins = []string{"/usr/lib/rabbitmq/bin/rabbitmq-server", "/usr/sbin/rabbitmq-server"}

// StartTimeout bounds a node's start.
const StartTimeout = 90 * time.Second

// Server is a throw-away RabbitMQ node.
type Server struct {
	bin   string
	dir   string
	name  string
	port  int // AMQP
	dist  int
	epmd  int
	cmd   *exec.Cmd
	waitc chan error
	// exited is how the node's last run ended.
	exited error
}

// Start is [New] for a test: it skips the test when rabbitmq-server is not
// installed (fails it under CI) and stops the node and removes its files in
// t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New()
	if errors.Is(err, ErrUnavailable) {
		if os.Getenv("CI") != "" {
			t.Fatalf("rabbittest: %v (CI: .ci/run installs rabbitmq-server)", err)
		}
		t.Skipf("rabbittest: %v: apt-get install rabbitmq-server", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("rabbittest: %v", err)
		}
	})
	return s
}

// New starts a node on 127.0.0.1 with the default user guest/guest and
// waits until it takes AMQP connections.
func New() (_ *Server, err error) {
	s := &Server{}
	for _, b := range bins {
		if _, err := os.Stat(b); err == nil {
			s.bin = b
			break
		}
	}
	if s.bin == "" {
		return nil, fmt.Errorf("%w: none of %v", ErrUnavailable, bins)
	}
	ports, err := freeport.Ports(3)
	if err != nil {
		return nil, err
	}
	s.port, s.dist, s.epmd = ports[0], ports[1], ports[2]
	if s.dir, err = os.MkdirTemp("", "hookjet-rabbit-"); err != nil {
		return nil, err
	}
	s.name = "hookjet" + strconv.Itoa(s.port) + "@localhost"
	if err := os.WriteFile(filepath.Join(s.dir, "enabled_plugins"), []byte("[].\n"), 0o600); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	return s, s.Restart()
}

// URL is the node's AMQP URL with the guest user.
func (s *Server) URL() string { return "amqp://guest:guest@" + s.Addr() + "/" }

// Addr is the node's AMQP address, host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *Server) env() []string {
	return append(os.Environ(),
		"HOME="+s.dir,
		"RABBITMQ_NODENAME="+s.name,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(s.port),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(s.dist),
		"ERL_EPMD_PORT="+strconv.Itoa(s.epmd),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"RABBITMQ_MNESIA_BASE="+filepath.Join(s.dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(s.dir, "log"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(s.dir, "enabled_plugins"),
		"RABBITMQ_PLUGINS_EXPAND_DIR="+filepath.Join(s.dir, "plugins"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(s.dir, "rabbitmq"),
		"RABBITMQ_ADVANCED_CONFIG_FILE="+filepath.Join(s.dir, "advanced.config"),
		"RABBITMQ_PID_FILE="+filepath.Join(s.dir, "pid"),
	)
}

// Restart starts the node again after [Server.Kill], on the same port with
// the same data (durable queues and their messages survive).
func (s *Server) Restart() error {
	if s.cmd != nil {
		return errors.New("rabbittest: the node is running")
	}
	out, err := os.OpenFile(filepath.Join(s.dir, "out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = out.Close() }()
	cmd := exec.Command(s.bin)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = s.dir, s.env(), out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("rabbittest: %w", err)
	}
	s.cmd, s.waitc = cmd, make(chan error, 1)
	go func() { s.waitc <- cmd.Wait() }()
	deadline := time.Now().Add(StartTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.waitc:
			s.cmd = nil
			b, _ := os.ReadFile(filepath.Join(s.dir, "out"))
			return fmt.Errorf("rabbittest: rabbitmq-server exited: %w\n%s", err, tail(b))
		default:
		}
		if amqpReady(s.Addr()) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("rabbittest: not taking connections on %s after %v", s.Addr(), StartTimeout)
}

// amqpReady reports whether the node at addr answers AMQP's protocol
// header with its connection.start frame: an open port alone is not a
// node that takes connections (a node still booting, or one going down,
// may hold it).
func amqpReady(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer func() { _ = c.Close() }()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return false
	}
	if _, err := c.Write([]byte("AMQP\x00\x00\x09\x01")); err != nil {
		return false
	}
	var frame [7]byte // type, channel, size: a method frame is type 1
	_, err = io.ReadFull(c, frame[:])
	return err == nil && frame[0] == 1
}

// Log is the tail of the node's output, for a test's failure message.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "out"))
	return string(tail(b))
}

// Kill stops the node at once (SIGKILL to its process group): the broker
// going down mid-run.
func (s *Server) Kill() error {
	if s.cmd == nil {
		return nil
	}
	err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.exited = <-s.waitc // "signal: killed"
	s.cmd = nil
	return err
}

// Close stops the node, its epmd, and removes its files.
func (s *Server) Close() error {
	err := s.Kill()
	if s.epmd != 0 {
		// epmd refuses to stop while it still lists the node, which it
		// drops once it notices the node's connection closed
		for range 50 {
			kill := exec.Command("epmd", "-kill")
			kill.Env = append(os.Environ(), "ERL_EPMD_PORT="+strconv.Itoa(s.epmd))
			out, err := kill.CombinedOutput()
			if err == nil && strings.Contains(string(out), "Killed") || strings.Contains(string(out), "Cannot connect") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}

func tail(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}
