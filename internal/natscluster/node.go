package natscluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Node is one nats-server process of a cluster. Its methods are safe for
// concurrent use.
type Node struct {
	Name        string // n1, n2, ...
	Index       int
	ClientPort  int
	RoutePort   int
	MonitorPort int
	StoreDir    string

	binary, config, logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited
	paused bool
}

// URL is the node's client URL.
func (n *Node) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.ClientPort) }

// Running reports whether the node's process is alive (paused counts).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// launch starts the process, its output appended to the node's log file.
func (n *Node) launch() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("%s: already running", n.Name)
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(n.binary, "-c", n.config)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The node dies with its owner, even when the owner is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", n.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		n.mu.Lock()
		if n.cmd == cmd {
			n.cmd, n.paused = nil, false
		}
		n.mu.Unlock()
		close(done)
	}()
	n.cmd, n.done, n.paused = cmd, done, false
	return nil
}

// Start starts a stopped node and waits until it is healthy again.
func (n *Node) Start(ctx context.Context, timeout time.Duration) error {
	if err := n.launch(); err != nil {
		return err
	}
	return n.WaitHealthy(ctx, timeout)
}

// Kill sends SIGKILL (kill -9) and waits until the process is gone. A node
// that is not running is left alone.
func (n *Node) Kill() error {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", n.Name, err)
	}
	<-done
	return nil
}

// Pause stops the process with SIGSTOP: it keeps its sockets and files but
// runs no code until Resume.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP, true) }

// Resume continues a paused process with SIGCONT.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT, false) }

func (n *Node) signal(sig syscall.Signal, paused bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("%s: not running", n.Name)
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: %v: %w", n.Name, sig, err)
	}
	n.paused = paused
	return nil
}

// WaitHealthy polls the node's /healthz until it answers 200, the process
// exits, or timeout passes.
func (n *Node) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		n.mu.Lock()
		running := n.cmd != nil
		n.mu.Unlock()
		if !running {
			return fmt.Errorf("%s exited (see %s)", n.Name, n.logPath)
		}
		if last = healthy(ctx, n.MonitorPort); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after %s: %w", n.Name, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
