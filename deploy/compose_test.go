package deploy

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/hookjet/hookjet/config"
)

// composeService is what TestCompose reads of a compose.yaml service.
type composeService struct {
	Image       string `yaml:"image"`
	Build       *struct{ Context, Dockerfile string }
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	DependsOn   []string          `yaml:"depends_on"`
}

// TestCompose checks deploy/compose, which cannot run here (no container
// engine): its services, that the NATS nodes route to each other and run
// the nats-server release of go.mod, and that the config the hookjet
// processes share, with each one's environment, passes hookjet's own
// validation and reaches the NATS nodes and the receiver.
func TestCompose(t *testing.T) {
	raw, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Services map[string]composeService `yaml:"services"`
		Volumes  map[string]any            `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	svc := file.Services
	want := []string{"hookjet-1", "hookjet-2", "nats-1", "nats-2", "nats-3", "receiver"}
	var names []string
	for n := range svc {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}

	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`github.com/nats-io/nats-server/v2 v(\S+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod names no nats-server")
	}
	natsImage := "docker.io/library/nats:" + string(m[1])
	natsNodes := []string{"nats-1", "nats-2", "nats-3"}
	for _, n := range natsNodes {
		s := svc[n]
		if s.Image != natsImage {
			t.Errorf("%s: image %q, want %q (go.mod's nats-server)", n, s.Image, natsImage)
		}
		args := strings.Join(s.Command, " ")
		for _, other := range natsNodes {
			route := "nats://" + other + ":6222"
			if has := strings.Contains(args, route); has != (other != n) {
				t.Errorf("%s: routes %q: want a route to each other node and none to itself", n, args)
			}
		}
		for _, flag := range []string{"--jetstream", "--cluster_name hookjet", "--store_dir /data", "--name " + n} {
			if !strings.Contains(args, flag) {
				t.Errorf("%s: command %q lacks %s", n, args, flag)
			}
		}
		if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/data") }) {
			t.Errorf("%s: no volume on /data: its JetStream store would not survive the container", n)
		}
	}

	recv := svc["receiver"]
	recvArgs := map[string]string{}
	for i := 0; i+1 < len(recv.Command); i++ {
		if strings.HasPrefix(recv.Command[i], "--") {
			recvArgs[recv.Command[i]] = recv.Command[i+1]
		}
	}
	if recv.Command[0] != "listen" {
		t.Errorf("receiver runs %q, want hookjet listen", recv.Command)
	}
	_, recvPort, _ := net.SplitHostPort(recvArgs["--addr"])

	dataVolumes := map[string]string{}
	for _, n := range []string{"hookjet-1", "hookjet-2"} {
		s := svc[n]
		if s.Build == nil || s.Build.Dockerfile != "Dockerfile" {
			t.Errorf("%s: not built from the Dockerfile", n)
		} else if _, err := os.Stat(filepath.Join("compose", s.Build.Context, s.Build.Dockerfile)); err != nil {
			t.Errorf("%s: build context: %v", n, err)
		}
		for _, dep := range append(slices.Clone(natsNodes), "receiver") {
			if !slices.Contains(s.DependsOn, dep) {
				t.Errorf("%s does not depend on %s", n, dep)
			}
		}
		// The config file the process reads, from its bind mount.
		path := ""
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			switch {
			case len(parts) >= 2 && parts[1] == s.Environment["HOOKJET_CONFIG"]:
				path = filepath.Join("compose", parts[0])
			case len(parts) >= 2 && parts[1] == "/data":
				if other, dup := dataVolumes[parts[0]]; dup {
					t.Errorf("%s and %s share the volume %s: each process needs a data_dir of its own", n, other, parts[0])
				}
				dataVolumes[parts[0]] = n
				if _, ok := file.Volumes[parts[0]]; !ok {
					t.Errorf("%s: volume %s is not declared", n, parts[0])
				}
			}
		}
		if path == "" {
			t.Fatalf("%s: no volume mounts HOOKJET_CONFIG (%q)", n, s.Environment["HOOKJET_CONFIG"])
		}
		// The environment the process gets: compose's and the image's.
		env := map[string]string{"HOOKJET_DATA_DIR": "/data"}
		var environ []string
		for k, v := range s.Environment {
			env[k] = v
		}
		for k, v := range env {
			environ = append(environ, k+"="+v)
		}
		if err := config.CheckEnv(environ, "HOOKJET_CONFIG"); err != nil {
			t.Errorf("%s: environment: %v", n, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(data, func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%s: hookjet refuses %s: %v", n, path, err)
		}
		if cfg.Streams.Replicas != 3 {
			t.Errorf("%s: streams.replicas %d on a 3-node cluster, want 3", n, cfg.Streams.Replicas)
		}
		var hosts []string
		for u := range strings.SplitSeq(cfg.NATS.URL, ",") {
			pu, err := url.Parse(u)
			if err != nil {
				t.Fatalf("%s: nats.url %q: %v", n, u, err)
			}
			hosts = append(hosts, pu.Hostname())
		}
		if !slices.Equal(hosts, natsNodes) {
			t.Errorf("%s: nats.url reaches %v, want every node %v", n, hosts, natsNodes)
		}
		if len(cfg.Endpoints) == 0 {
			t.Fatalf("%s: no endpoint", n)
		}
		for _, ep := range cfg.Endpoints {
			u, _ := url.Parse(ep.URL)
			if u.Hostname() != "receiver" || u.Port() != recvPort {
				t.Errorf("%s: endpoint %s delivers to %s, not to the receiver (port %s)", n, ep.ID, ep.URL, recvPort)
			}
			if !slices.ContainsFunc(ep.Secrets, func(s config.Secret) bool { return s.Reveal() == recvArgs["--secret"] }) {
				t.Errorf("%s: the receiver verifies with a secret endpoint %s does not sign with", n, ep.ID)
			}
		}
	}
	if len(dataVolumes) != 2 {
		t.Errorf("data volumes %v, want one per hookjet process", dataVolumes)
	}
}

// TestChartAlertsAreTheRules checks that the Helm chart's copy of the alert
// rules (its PrometheusRule) is deploy/prometheus/alerts.yml: a chart reads
// no file outside its directory.
func TestChartAlertsAreTheRules(t *testing.T) {
	a, err := os.ReadFile(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("helm/hookjet/files/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("helm/hookjet/files/alerts.yml differs from %s: cp deploy/%s deploy/helm/hookjet/files/alerts.yml", alertsPath, alertsPath)
	}
}
