package natscluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hookjet/hookjet/internal/freeport"
)

// Options say what cluster to run. The zero value of each field has the
// meaning its comment gives.
type Options struct {
	// Binary is the nats-server executable. Required.
	Binary string
	// Dir holds each node's config, store directory (Dir/<name>/store) and
	// output (Dir/<name>.log). Required.
	Dir string
	// Size is the number of nodes; 0 means 3.
	Size int
	// Name is the cluster name; empty means "hookjet".
	Name string
	// SyncInterval is JetStream's sync_interval: empty keeps the server's
	// default (fsync every 2 minutes); "always" fsyncs before each
	// acknowledgement; a duration such as "10s" sets the interval.
	SyncInterval string
	// StoreDir, when set, gives node i's store directory (for example a
	// mount point that can lose unsynced writes); nil means Dir/<name>/store.
	StoreDir func(i int) string
}

// Cluster is a running set of nodes.
type Cluster struct {
	nodes []*Node
}

// Start writes each node's configuration, starts every node and waits until
// every node reports healthy JetStream (a meta leader is elected). On error
// the nodes already started are killed.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Binary == "" || o.Dir == "" {
		return nil, errors.New("natscluster: Options.Binary and Options.Dir are required")
	}
	if o.Size == 0 {
		o.Size = 3
	}
	if o.Name == "" {
		o.Name = "hookjet"
	}
	ports, err := freeport.Ports(3 * o.Size)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for i := range o.Size {
		name := fmt.Sprintf("n%d", i+1)
		n := &Node{
			Name: name, Index: i, binary: o.Binary,
			ClientPort: ports[3*i], RoutePort: ports[3*i+1], MonitorPort: ports[3*i+2],
			StoreDir: filepath.Join(o.Dir, name, "store"),
			config:   filepath.Join(o.Dir, name+".conf"),
			logPath:  filepath.Join(o.Dir, name+".log"),
		}
		if o.StoreDir != nil {
			n.StoreDir = o.StoreDir(i)
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		if err := os.MkdirAll(n.StoreDir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(n.config, []byte(c.configFor(n, o)), 0o644); err != nil {
			return nil, err
		}
	}
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	for _, n := range c.nodes {
		if err := n.launch(); err != nil {
			return nil, err
		}
	}
	for _, n := range c.nodes {
		if err := n.WaitHealthy(ctx, 60*time.Second); err != nil {
			return nil, err
		}
	}
	ok = true
	return c, nil
}

// configFor renders node n's nats-server configuration.
func (c *Cluster) configFor(n *Node, o Options) string {
	var routes []string
	for _, p := range c.nodes {
		if p != n {
			routes = append(routes, fmt.Sprintf("%q", fmt.Sprintf("nats-route://127.0.0.1:%d", p.RoutePort)))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %q\nlisten: \"127.0.0.1:%d\"\nhttp: \"127.0.0.1:%d\"\n", n.Name, n.ClientPort, n.MonitorPort)
	fmt.Fprintf(&b, "max_payload: 8MB\n")
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n", n.StoreDir)
	if o.SyncInterval != "" {
		fmt.Fprintf(&b, "  sync_interval: %q\n", o.SyncInterval)
	}
	b.WriteString("}\n")
	fmt.Fprintf(&b, "cluster {\n  name: %q\n  listen: \"127.0.0.1:%d\"\n  no_advertise: true\n  routes: [%s]\n}\n",
		o.Name, n.RoutePort, strings.Join(routes, ", "))
	return b.String()
}

// Nodes returns the nodes in order (n1, n2, ...).
func (c *Cluster) Nodes() []*Node { return c.nodes }

// URL is every node's client URL, comma-separated, as nats.Connect takes it.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// WaitHealthy waits until every node reports healthy JetStream.
func (c *Cluster) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	for _, n := range c.nodes {
		if err := n.WaitHealthy(ctx, timeout); err != nil {
			return err
		}
	}
	return nil
}

// Close kills every node (a paused one too) and waits for it to exit.
func (c *Cluster) Close() {
	for _, n := range c.nodes {
		_ = n.Kill()
	}
}

// EnsureBinary builds nats-server from the module in go.mod into path unless
// a file is already there. moduleDir is a directory inside the hookjet
// module (the build resolves the version from its go.mod).
func EnsureBinary(ctx context.Context, moduleDir, path string, out io.Writer) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", abs, "github.com/nats-io/nats-server/v2")
	cmd.Dir, cmd.Stdout, cmd.Stderr = moduleDir, out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build nats-server into %s: %w", path, err)
	}
	return nil
}

// healthy asks a node's monitoring endpoint whether its JetStream is
// healthy (the server answers 200 once it is current with its cluster).
func healthy(ctx context.Context, monitorPort int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/healthz", monitorPort), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}
