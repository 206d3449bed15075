package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/internal/apicheck"
	"github.com/hookjet/hookjet/internal/testkit"
	hjs "github.com/hookjet/hookjet/jetstream"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	// Every call a test makes to /api/v1/... (the harness's api, http.Get,
	// http.DefaultClient, an http.Client without a transport, the commands
	// run in process) is validated against the OpenAPI document: a
	// mismatch fails the call, and the run.
	openapi, err := apicheck.Install()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	baseline := goleak.IgnoreCurrent()
	code := m.Run()
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "openapi: %d calls to the admin API validated against api/openapi.json\n", openapi.Checked())
	}
	if failures := openapi.Failures(); len(failures) > 0 {
		fmt.Fprintf(os.Stderr, "%d calls to the admin API did not match api/openapi.json:\n", len(failures))
		for _, f := range failures {
			fmt.Fprintln(os.Stderr, "  "+f)
		}
		code = 1
	}
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	if code == 0 {
		// Every hookjet, nats-server and receiver a test started has been
		// stopped by its cleanup: nothing may be left running.
		if err := goleak.Find(append(natsBatchStoreLeak, baseline)...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// natsBatchStoreLeak ignores the goroutines of an atomic batch's staging
// store that nats-server 2.15.2 leaves behind when a stream stops while the
// batch is being staged (TestOutboxNATSRestart shuts the server down under
// the outbox relay's atomic batches: processJetStreamAtomicBatchMsg creates
// the store without checking that the stream is closing, after
// deleteAtomicBatches has run). Only the store's own goroutines: a server
// left running still shows its others.
var natsBatchStoreLeak = []goleak.Option{
	goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*msgBlock).flushLoop"),
	goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop"),
	goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server/ats.Register.func1"),
}

// hookjetBinary builds cmd/hookjet once per test run; TestMain removes it.
func hookjetBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hookjet-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "hookjet")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/hookjet").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// process is a running `hookjet serve`.
type process struct {
	cmd  *exec.Cmd
	out  *testkit.LockedBuffer
	done chan error
	// exited is closed once the process has been waited for.
	exited chan struct{}
}

func startBinary(t *testing.T, configPath, adminAddr string, env ...string) *process {
	t.Helper()
	return startBinaryWithin(t, 30*time.Second, configPath, adminAddr, env...)
}

// smallStreams keep a test binary's stream reservations small: JetStream
// reserves every stream's max_bytes against the disk when it creates the
// stream, and the defaults (35 GiB in all) refuse to start where less than
// about 47 GB is free. A test's own env, after these, overrides them.
var smallStreams = []string{
	"HOOKJET_STREAMS_MAX_BYTES=268435456", "HOOKJET_STREAMS_TASKS_MAX_BYTES=268435456",
	"HOOKJET_STREAMS_DLQ_MAX_BYTES=67108864", "HOOKJET_LOG_MAX_BYTES=67108864",
}

// startBinaryWithin is startBinary waiting up to ready for /readyz.
func startBinaryWithin(t *testing.T, ready time.Duration, configPath, adminAddr string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(hookjetBinary(t), "serve", "--config", configPath)
	cmd.Env = append(append(os.Environ(), smallStreams...), env...)
	p := &process{cmd: cmd, out: &testkit.LockedBuffer{}, done: make(chan error, 1), exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		close(p.exited)
		p.done <- err
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("hookjet output:\n%s", p.out.String())
		}
	})
	checkFor(t, ready, 50*time.Millisecond, func() error {
		select {
		case err := <-p.done:
			p.done <- err
			return nil
		default:
		}
		resp, err := http.Get("http://" + adminAddr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("readyz: %d", resp.StatusCode)
		}
		return nil
	})
	return p
}

func (p *process) signal(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("hookjet did not exit after %v", sig)
		return nil
	}
}

// binaryConfig writes a config for one endpoint "sink" at url, on free
// loopback ports, in a new temporary directory.
func binaryConfig(t *testing.T, url string) (dir, cfgPath, natsAddr, adminAddr string) {
	t.Helper()
	dir = t.TempDir()
	natsAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	adminAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	return dir, writeConfig(t, dir, natsAddr, adminAddr, url, ""), natsAddr, adminAddr
}

func writeConfig(t *testing.T, dir, natsListen, adminListen, url, extra string) string {
	t.Helper()
	cfg := fmt.Sprintf(`data_dir: %s
nats:
  listen: %s
admin:
  listen: %s
log:
  format: json
security:
  allow_private_networks: true
worker:
  shutdown_grace: 10s
defaults:
  timeout: 2s
  retry: {base: 50ms, cap: 500ms, max_attempts: 50, max_age: 1h}
%sendpoints:
  - id: sink
    url: %s
    secrets: [%s, %s]
`, filepath.Join(dir, "data"), natsListen, adminListen, extra, url, secretA, secretB)
	path := filepath.Join(dir, "hookjet.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBinaryServePublishSIGTERM(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	_, cfgPath, natsAddr, adminAddr := binaryConfig(t, r.URL)
	p := startBinary(t, cfgPath, adminAddr)

	nc, err := nats.Connect("nats://" + natsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := js.Publish(t.Context(), "hookjet.events.order.created", fmt.Appendf(nil, `{"i":%d}`, i), natsjs.WithMsgID(fmt.Sprintf("evt_%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if r.distinct() != 20 {
			return fmt.Errorf("received %d of 20", r.distinct())
		}
		return nil
	})
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.out.String())
	}
	if strings.Contains(p.out.String(), secretA[6:]) {
		t.Fatal("the log contains a secret")
	}
}

func TestBinaryExitCodes(t *testing.T) {
	bin := hookjetBinary(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.yaml", "endpoints:\n  - id: Bad Id\n    url: ftp://x\n    secrets: [nope]\n")
	ep := "endpoints:\n  - id: ok\n    url: https://example.com/h\n    secrets: [" + secretA + "]\n"
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"version", []string{"version"}, 0, "hookjet"},
		{"help", []string{"serve", "--help"}, 0, "--config"},
		{"unknown command", []string{"nope"}, 2, "unknown command"},
		{"bad flag", []string{"serve", "--nope"}, 2, "flag provided but not defined"},
		{"invalid config", []string{"serve", "--config", bad}, 2, "endpoints[0].url"},
		{"missing config file", []string{"serve", "--config", filepath.Join(dir, "missing.yaml")}, 2, "missing.yaml"},
		{"unknown key", []string{"serve", "--config", write("k.yaml", "nats:\n  urll: x\n")}, 2, "nats.urll"},
		{"duration without unit", []string{"serve", "--config", write("d.yaml", "defaults:\n  timeout: 15\n")}, 2, "defaults.timeout"},
		{"short secret", []string{"serve", "--config", write("s.yaml", "endpoints:\n  - id: a\n    url: https://example.com\n    secrets: [whsec_c2hvcnQ=]\n")}, 2, "endpoints[0].secrets[0]"},
		{"duplicate id", []string{"serve", "--config", write("dup.yaml", ep+"  - id: ok\n    url: https://example.org\n    secrets: ["+secretB+"]\n")}, 2, "endpoints[1].id"},
		{"reserved header", []string{"serve", "--config", write("h.yaml", ep+"    headers: {webhook-signature: x}\n")}, 2, "endpoints[0].headers"},
		{"https only", []string{"serve", "--config", write("t.yaml", "security:\n  https_only: true\nendpoints:\n  - id: a\n    url: http://example.com\n    secrets: ["+secretA+"]\n")}, 2, "endpoints[0].url"},
		{"admin without token", []string{"serve", "--config", write("a.yaml", "admin:\n  listen: 0.0.0.0:8089\n")}, 2, "admin"},
		{"bad env override", []string{"serve"}, 2, "HOOKJET_WORKER_CONCURRENCY"},
		{"unknown env variable", []string{"serve"}, 2, "HOOKJET_ADMIN_TOKN"},
		{"version help", []string{"version", "--help"}, 0, "Prints hookjet's version"},
		{"unknown subcommand", []string{"endpoints", "frobnicate", "shop"}, 2, `unknown command "frobnicate"`},
		{"broken yaml names the file", []string{"serve", "--config", write("broken.yaml", "admin:\n  listen: [\n")}, 2, "broken.yaml"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tt.args...)
			cmd.Env = append(os.Environ(), "HOOKJET_DATA_DIR="+t.TempDir())
			switch tt.name {
			case "bad env override":
				cmd.Env = append(cmd.Env, "HOOKJET_WORKER_CONCURRENCY=lots")
			case "unknown env variable":
				cmd.Env = append(cmd.Env, "HOOKJET_ADMIN_TOKN=abc")
			}
			out, _ := cmd.CombinedOutput()
			code := cmd.ProcessState.ExitCode()
			if code != tt.code || !strings.Contains(string(out), tt.want) {
				t.Fatalf("exit %d (want %d), output:\n%s", code, tt.code, out)
			}
		})
	}
}

// SIGTERM under load: in-flight deliveries finish and are acked, buffered
// messages go back to JetStream, the process exits 0, and after a restart
// every event arrives with no duplicate. The receiver holds every request
// after the first 100 until the process has logged that it is shutting
// down, so the signal lands with deliveries in flight and most events not
// yet delivered, however fast the machine. (The embedded server stops with
// hookjet; messages its consumers still had as pending at that moment come
// back after AckWait, 30 s here, and those already delivered are then
// suppressed by the ledger: that wait is most of this test's run time.)
func TestBinarySIGTERMUnderLoadLosesNothing(t *testing.T) {
	const before = 100 // requests answered at once; the rest wait for the gate
	gate := make(chan struct{})
	var answered atomic.Int64
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		if answered.Add(1) > before {
			<-gate
		}
		w.WriteHeader(http.StatusOK)
	})
	var openGate sync.Once
	t.Cleanup(func() { openGate.Do(func() { close(gate) }) }) // before the receiver closes
	_, cfgPath, natsAddr, adminAddr := binaryConfig(t, r.URL)
	p := startBinary(t, cfgPath, adminAddr)
	_, js := connectJS(t, "nats://"+natsAddr)
	ids := eventIDs("evt_term", 600)
	var st pubStats
	if err := publishRetrying(t.Context(), js, ids, 4, 0, &st); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 15*time.Second, time.Millisecond, func() error {
		if n := r.count(); n <= before {
			return fmt.Errorf("received %d, want more than %d (some held at the gate)", n, before)
		}
		return nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 15*time.Second, 5*time.Millisecond, func() error {
		if !strings.Contains(p.out.String(), "shutting down") {
			return errors.New("hookjet has not started shutting down yet")
		}
		return nil
	})
	held := r.count() - before
	openGate.Do(func() { close(gate) }) // the deliveries in flight finish within the grace
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM under load: %v\n%s", err, p.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hookjet did not exit after SIGTERM")
	}
	atStop := r.distinct()
	if atStop == len(ids) {
		t.Fatal("everything arrived before SIGTERM: the test proves nothing")
	}
	restarted := time.Now()
	startBinary(t, cfgPath, adminAddr)
	waitAllDelivered(t, r, ids, 30*time.Second)
	t.Logf("%d requests held at SIGTERM, %d of %d events had arrived at the exit; all arrived %s after the restart", held, atStop, len(ids), time.Since(restarted).Round(time.Millisecond))
	_, js2 := connectJS(t, "nats://"+natsAddr)
	waitSettled(t, js2, "sink", 15*time.Second)
	if dups := r.count() - r.distinct(); dups != 0 {
		t.Fatalf("%d duplicate deliveries after a graceful stop (%d had arrived at the exit)", dups, atStop)
	}
}

// SIGHUP reloads the endpoints from the file; a broken file is refused and
// the running endpoints keep working.
func TestBinarySIGHUPReloadsEndpoints(t *testing.T) {
	a := newReceiver(t, []string{secretA, secretB}, nil)
	b := newReceiver(t, []string{secretA, secretB}, nil)
	_, cfgPath, natsAddr, adminAddr := binaryConfig(t, a.URL)
	p := startBinary(t, cfgPath, adminAddr)
	original, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	hup := func(text string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	// A broken file: refused, the process keeps running.
	hup(string(original) + "  - id: Broken!\n")
	added := string(original) + fmt.Sprintf("  - id: second\n    url: %s\n    secrets: [%s, %s]\n", b.URL, secretA, secretB)
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(p.out.String(), "reload refused") {
			return errors.New("the broken file has not been refused yet")
		}
		return nil
	})
	hup(added)
	_, js := connectJS(t, "nats://"+natsAddr)
	checkFor(t, 15*time.Second, 100*time.Millisecond, func() error {
		resp, err := http.Get("http://" + adminAddr + "/api/v1/endpoints/second")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the added endpoint: HTTP %d", resp.StatusCode)
		}
		return nil
	})
	var st pubStats
	if err := publishRetrying(t.Context(), js, []string{"evt_hup"}, 1, 0, &st); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if a.requestsFor("evt_hup") != 1 || b.requestsFor("evt_hup") != 1 {
			return fmt.Errorf("sink=%d second=%d", a.requestsFor("evt_hup"), b.requestsFor("evt_hup"))
		}
		return nil
	})
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// A process with 100,000 endpoints in its file starts, shares them all
// (in the background once it is ready), and applies what another process's file changes in
// the shared bucket meanwhile (here the test writes an endpoint's
// definition again and again, through the whole start): the last change
// is in force, and no watch dropped a message ("slow consumer").
func TestBinaryHundredThousandConfigEndpointsAndAChangeDuringStart(t *testing.T) {
	const n = 100_000
	// The server fsyncs every write, as hookjet's embedded one does by
	// default (nats.sync: always): each value stored costs an fsync.
	standalone := standaloneNATS(t)
	ns := startNATSNode(t, "ext", func() *server.Options {
		o := standalone()
		o.SyncAlways = true
		return o
	})
	r := newReceiver(t, []string{secretA, secretB}, nil)
	dir := t.TempDir()
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var b strings.Builder
	fmt.Fprintf(&b, "data_dir: %s\nnats:\n  url: %s\nadmin:\n  listen: %s\nlog:\n  format: json\n", filepath.Join(dir, "data"), ns.url(), adminAddr)
	fmt.Fprintf(&b, "security:\n  allow_private_networks: true\n  secret_key: %s\nendpoints:\n", testSecretKey)
	for i := range n {
		fmt.Fprintf(&b, "  - id: ep%06d\n    url: %s/ep/%d\n    secrets: [%s]\n    events: [\"tenant%d.>\"]\n", i, r.URL, i, secretA, i)
	}
	cfgPath := filepath.Join(dir, "hookjet.yaml")
	if err := os.WriteFile(cfgPath, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// The other process: its file's endpoint "moving" changes all through
	// the start.
	_, js := connectJS(t, ns.url())
	key, err := config.DecodeSecretKey(config.NewSecret(testSecretKey))
	if err != nil {
		t.Fatal(err)
	}
	other, err := hjs.OpenEndpointStore(t.Context(), js, key, 1, hjs.StoreBucket(hjs.ConfigEndpointBucket, "test"))
	if err != nil {
		t.Fatal(err)
	}
	moving := func(rev int) config.EndpointSpec {
		// A config process shares its endpoints resolved (every setting).
		return config.SpecOf(config.Endpoint{ID: "moving", URL: fmt.Sprintf("%s/moving/%d", r.URL, rev), Events: []string{"moving.>"},
			Secrets:  []config.Secret{config.NewSecret(secretA), config.NewSecret(secretB)},
			Headers:  map[string]config.Secret{"X-Revision": config.NewSecret(strconv.Itoa(rev))},
			Settings: config.Default().Defaults})
	}
	stopWriting := make(chan struct{})
	var written atomic.Int64 // the last revision stored
	var writer sync.WaitGroup
	writer.Go(func() {
		for rev := 1; ; rev++ {
			select {
			case <-stopWriting:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if err := other.Put(t.Context(), other.Record(moving(rev))); err != nil {
				t.Errorf("the other process's write %d: %v", rev, err)
				return
			}
			written.Store(int64(rev))
		}
	})
	started := time.Now()
	p := startBinaryWithin(t, 5*time.Minute, cfgPath, adminAddr)
	close(stopWriting)
	writer.Wait()
	last := written.Load()
	t.Logf("ready after %s; the other process wrote %d revisions meanwhile", time.Since(started).Round(time.Millisecond), last)
	if last < 2 {
		t.Fatalf("only %d revisions written during the start: the test proves nothing", last)
	}
	kv, err := js.KeyValue(t.Context(), hjs.ConfigEndpointBucket)
	if err != nil {
		t.Fatal(err)
	}
	// The file's endpoints are in force at ready; storing them for the
	// other processes goes on in the background after it.
	checkFor(t, 2*time.Minute, 100*time.Millisecond, func() error {
		st, err := kv.Status(t.Context())
		if err != nil {
			return err
		}
		if st.Values() != n+1 {
			return fmt.Errorf("the bucket holds %d values, want the %d of the file and the other process's one", st.Values(), n)
		}
		return nil
	})
	want := moving(int(last)).URL
	checkFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		var ep struct {
			URL string `json:"url"`
		}
		resp, err := http.Get("http://" + adminAddr + "/api/v1/endpoints/moving")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&ep); err != nil {
			return fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
		}
		if ep.URL != want {
			return fmt.Errorf("moving is at %q (HTTP %d), want the last revision's %q", ep.URL, resp.StatusCode, want)
		}
		return nil
	})
	m := nats.NewMsg(hjs.EventsPrefix + "moving.created")
	m.Header.Set(hjs.HdrMsgID, "evt_moving")
	m.Data = []byte(`{}`)
	if _, err := js.PublishMsg(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "evt_moving")
	for _, d := range r.deliveries() {
		if got := d.Header.Get("X-Revision"); got != strconv.FormatInt(last, 10) {
			t.Errorf("delivered with revision %s of moving, want the last, %d", got, last)
		}
	}
	if out := p.out.String(); strings.Contains(out, "slow consumer") {
		t.Errorf("a subscription dropped messages during the start:\n%s", grepLines(out, "slow consumer", 5))
	}
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// testSecretKey is the security.secret_key of the processes that share a
// NATS in these tests (the harness's testConfig uses the same).
const testSecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// grepLines returns the first max lines of s that contain sub.
func grepLines(s, sub string, max int) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) && len(out) < max {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return strings.Join(out, "\n")
}
