package helmtest

import (
	"bytes"
	"encoding/base64"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/hookjet/hookjet/config"
)

const chartDir = "../helm/hookjet"

// kinds are the objects the chart may render, by apiVersion and kind.
var kinds = map[string]func() any{
	"v1/ConfigMap":                            func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                               func() any { return new(corev1.Secret) },
	"v1/Service":                              func() any { return new(corev1.Service) },
	"v1/ServiceAccount":                       func() any { return new(corev1.ServiceAccount) },
	"apps/v1/StatefulSet":                     func() any { return new(appsv1.StatefulSet) },
	"networking.k8s.io/v1/Ingress":            func() any { return new(networkingv1.Ingress) },
	"policy/v1/PodDisruptionBudget":           func() any { return new(policyv1.PodDisruptionBudget) },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return new(monitoringv1.ServiceMonitor) },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return new(monitoringv1.PrometheusRule) },
}

// rendered is one values file's manifests, decoded.
type rendered struct {
	objects map[string]any // "Kind/name" to the typed object
	notes   string
}

// render renders the chart with the values of file ("" for the defaults)
// and decodes every manifest strictly.
func render(t *testing.T, ch *chart.Chart, file string) rendered {
	t.Helper()
	vals := map[string]any{}
	if file != "" {
		v, err := common.ReadValuesFile(file)
		if err != nil {
			t.Fatal(err)
		}
		vals = v
	}
	out, err := renderValues(ch, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	r := rendered{objects: map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(out)) {
		text := out[name]
		if strings.HasSuffix(name, "NOTES.txt") {
			r.notes = text
			continue
		}
		for i, doc := range strings.Split("\n"+text, "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s #%d: %v\n%s", name, i, err, doc)
			}
			newObj, ok := kinds[head.APIVersion+"/"+head.Kind]
			if !ok {
				t.Fatalf("%s #%d: %s %s is not a kind this test knows", name, i, head.APIVersion, head.Kind)
			}
			obj := newObj()
			// Strict: an unknown or duplicated field fails, as kubectl's
			// server-side field validation would.
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Errorf("%s #%d (%s %s): %v\n%s", name, i, head.Kind, head.Metadata.Name, err, doc)
				continue
			}
			key := head.Kind + "/" + head.Metadata.Name
			if _, dup := r.objects[key]; dup {
				t.Errorf("%s rendered twice", key)
			}
			r.objects[key] = obj
		}
	}
	return r
}

func renderValues(ch *chart.Chart, vals map[string]any) (map[string]string, error) {
	rv, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: "hj", Namespace: "hooks", IsInstall: true}, nil)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
}

func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// valuesFiles are the defaults ("") and each example.
func valuesFiles(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join(chartDir, "examples", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	return append([]string{""}, files...)
}

func get[T any](t *testing.T, r rendered, key string) T {
	t.Helper()
	o, ok := r.objects[key]
	if !ok {
		t.Fatalf("%s not rendered (have %v)", key, slices.Sorted(maps.Keys(r.objects)))
	}
	v, ok := o.(T)
	if !ok {
		t.Fatalf("%s is a %T", key, o)
	}
	return v
}

// TestChartRenders renders every values file and checks what each must
// hold: the workload's security and probes, references that resolve, and a
// hookjet.yaml that hookjet accepts with the pod's environment.
func TestChartRenders(t *testing.T) {
	ch := loadChart(t)
	for _, file := range valuesFiles(t) {
		name := "defaults"
		if file != "" {
			name = filepath.Base(file)
		}
		t.Run(name, func(t *testing.T) {
			vals := map[string]any{"mode": "embedded"}
			if file != "" {
				v, err := common.ReadValuesFile(file)
				if err != nil {
					t.Fatal(err)
				}
				vals = v
			}
			r := render(t, ch, file)
			sts := get[*appsv1.StatefulSet](t, r, "StatefulSet/hj-hookjet")
			checkWorkload(t, r, sts, vals)
			checkConfig(t, r, sts)
			checkServices(t, r, sts)
			if r.notes == "" {
				t.Error("NOTES.txt rendered empty")
			}
		})
	}
}

func checkWorkload(t *testing.T, r rendered, sts *appsv1.StatefulSet, vals map[string]any) {
	t.Helper()
	spec := sts.Spec.Template.Spec
	mode, _ := vals["mode"].(string)
	want := int32(1)
	if mode == "cluster" {
		want = 3
		if c, ok := vals["cluster"].(map[string]any); ok {
			if n, ok := c["replicas"].(float64); ok {
				want = int32(n)
			}
		}
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != want {
		t.Errorf("replicas %v, want %d in %s mode", sts.Spec.Replicas, want, mode)
	}
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Error("enableServiceLinks is not false: Kubernetes would set HOOKJET_*_SERVICE_HOST, which hookjet refuses")
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", psc)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v: want a read-only root filesystem, no privilege escalation, every capability dropped", sc)
	}
	for _, p := range []struct {
		probe *corev1.Probe
		path  string
	}{{c.LivenessProbe, "/healthz"}, {c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "admin" {
			t.Errorf("probe %+v: want GET %s on port admin", p.probe, p.path)
		}
	}
	if c.Resources.Requests.Memory().IsZero() {
		t.Error("no memory request")
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["data"] != "/data" || mounts["config"] != "/etc/hookjet/config" || mounts["tmp"] != "/tmp" {
		t.Errorf("volume mounts %v: want data on /data, config on /etc/hookjet/config, tmp on /tmp (the root filesystem is read-only)", mounts)
	}
	// No mount inside another: the runtime cannot make a mount point in a
	// read-only ConfigMap or Secret volume.
	for a, pa := range mounts {
		for b, pb := range mounts {
			if a != b && strings.HasPrefix(pb, pa+"/") {
				t.Errorf("volume %s is mounted inside %s (%s in %s)", b, a, pb, pa)
			}
		}
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
		if v.ConfigMap != nil {
			get[*corev1.ConfigMap](t, r, "ConfigMap/"+v.ConfigMap.Name)
		}
	}
	for _, pvc := range sts.Spec.VolumeClaimTemplates {
		volumes[pvc.Name] = true
		if pvc.Spec.Resources.Requests.Storage().IsZero() {
			t.Errorf("volume claim %s requests no storage", pvc.Name)
		}
	}
	for name := range mounts {
		if !volumes[name] {
			t.Errorf("volume mount %s has no volume", name)
		}
	}
	if mode == "embedded" && len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Error("embedded mode without a volume claim for data_dir: the JetStream store would not survive the pod")
	}
	// Every Secret a chart-made reference names is rendered with that key,
	// unless the values name an existing Secret.
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		s, ok := r.objects["Secret/"+ref.Name].(*corev1.Secret)
		switch {
		case !ok && !strings.HasPrefix(ref.Name, "hj-"):
			// an existing Secret the values name
		case !ok:
			t.Errorf("env %s: Secret %s is not rendered", e.Name, ref.Name)
		case s.Data[ref.Key] == nil:
			t.Errorf("env %s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
		}
	}
	if r.objects["PodDisruptionBudget/hj-hookjet"] == nil {
		t.Error("no PodDisruptionBudget")
	}
}

// checkConfig parses the rendered hookjet.yaml as hookjet would in the pod:
// with its environment, secrets from Secrets standing in by placeholders.
func checkConfig(t *testing.T, r rendered, sts *appsv1.StatefulSet) {
	t.Helper()
	cm := get[*corev1.ConfigMap](t, r, "ConfigMap/hj-hookjet")
	data := cm.Data["hookjet.yaml"]
	env := map[string]string{}
	var environ []string
	for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			if s, ok := r.objects["Secret/"+ref.Name].(*corev1.Secret); ok {
				v = string(s.Data[ref.Key])
			} else if ref.Key == "secret-key" {
				v = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
			} else {
				// A value that serves as a token, a password or an
				// endpoint's whsec_ signing secret alike.
				v = "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			v = "1073741824"
		}
		env[e.Name] = v
		environ = append(environ, e.Name+"="+v)
	}
	if env["HOOKJET_CONFIG"] != "/etc/hookjet/config/hookjet.yaml" {
		t.Errorf("HOOKJET_CONFIG %q: want the ConfigMap's file", env["HOOKJET_CONFIG"])
	}
	// What cli.Main checks first: no HOOKJET_* variable hookjet does not know.
	if err := config.CheckEnv(environ, "HOOKJET_CONFIG"); err != nil {
		t.Errorf("the pod's environment: %v", err)
	}
	cfg, err := config.Parse([]byte(data), func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("hookjet refuses the rendered hookjet.yaml: %v\n%s", err, data)
	}
	if cfg.DataDir != "/data" || cfg.Admin.Listen != "0.0.0.0:8089" || cfg.Admin.Token.IsZero() {
		t.Errorf("data_dir %q, admin.listen %q, admin token set %v: want /data, 0.0.0.0:8089, a token", cfg.DataDir, cfg.Admin.Listen, !cfg.Admin.Token.IsZero())
	}
	if cfg.NATS.URL != "" && cfg.Security.SecretKey.IsZero() {
		t.Error("cluster mode without security.secret_key: hookjet refuses to start")
	}
}

// checkServices checks that every Service selects the pods and targets a
// named container port, and that Ingresses and the ServiceMonitor name
// rendered Services' ports.
func checkServices(t *testing.T, r rendered, sts *appsv1.StatefulSet) {
	t.Helper()
	ports := map[string]bool{}
	for _, p := range sts.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = true
	}
	svcPorts := map[string]map[string]bool{}
	for key, o := range r.objects {
		svc, ok := o.(*corev1.Service)
		if !ok {
			continue
		}
		if !reflect.DeepEqual(svc.Spec.Selector, sts.Spec.Selector.MatchLabels) {
			t.Errorf("%s selects %v, the pods are %v", key, svc.Spec.Selector, sts.Spec.Selector.MatchLabels)
		}
		svcPorts[svc.Name] = map[string]bool{}
		for _, p := range svc.Spec.Ports {
			if !ports[p.TargetPort.String()] {
				t.Errorf("%s port %s targets %s, not a container port (%v)", key, p.Name, p.TargetPort.String(), ports)
			}
			svcPorts[svc.Name][p.Name] = true
		}
	}
	if sts.Spec.ServiceName == "" || svcPorts[sts.Spec.ServiceName] == nil {
		t.Errorf("serviceName %q is not a rendered Service", sts.Spec.ServiceName)
	}
	for key, o := range r.objects {
		switch o := o.(type) {
		case *networkingv1.Ingress:
			for _, rule := range o.Spec.Rules {
				for _, p := range rule.HTTP.Paths {
					b := p.Backend.Service
					if b == nil || !svcPorts[b.Name][b.Port.Name] {
						t.Errorf("%s routes to %+v, not a rendered Service port", key, b)
					}
				}
			}
		case *monitoringv1.ServiceMonitor:
			for _, e := range o.Spec.Endpoints {
				if !svcPorts["hj-hookjet-admin"][e.Port] || e.Path != "/metrics" {
					t.Errorf("%s scrapes port %q path %q: want the admin Service's port and /metrics", key, e.Port, e.Path)
				}
				if e.Authorization == nil || e.Authorization.Credentials == nil {
					t.Errorf("%s sends no token: /metrics needs admin.token", key)
				}
			}
		}
	}
}

// TestPrometheusRuleIsTheAlerts checks that the PrometheusRule holds every
// rule of deploy/prometheus/alerts.yml, as written there.
func TestPrometheusRuleIsTheAlerts(t *testing.T) {
	r := render(t, loadChart(t), filepath.Join(chartDir, "examples", "full.yaml"))
	pr := get[*monitoringv1.PrometheusRule](t, r, "PrometheusRule/hj-hookjet")
	raw, err := os.ReadFile("../prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var want monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.Groups) == 0 || !reflect.DeepEqual(pr.Spec, want) {
		t.Errorf("the PrometheusRule's spec differs from deploy/prometheus/alerts.yml (copy it to the chart's files/alerts.yml)")
	}
}

// TestChartRefuses checks the values the chart refuses with a message:
// values.schema.json refuses unknown keys and wrong types, the templates
// the combinations.
func TestChartRefuses(t *testing.T) {
	ch := loadChart(t)
	for _, tt := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"mode": "both"}, `value must be one of 'embedded', 'cluster'`}, // values.schema.json
		{map[string]any{"replicas": 3}, "replicas"},                                    // a typo: cluster.replicas
		{map[string]any{"cluster": map[string]any{"replicas": 0}}, "replicas"},
		{map[string]any{"mode": "cluster"}, "cluster mode needs nats.url"},
		{map[string]any{"nats": map[string]any{"url": "nats://x:4222"}}, "that is cluster mode"},
	} {
		_, err := renderValues(ch, tt.vals)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("values %v: error %v, want one containing %q", tt.vals, err, tt.want)
		}
	}
}

// TestGeneratedSecrets checks the Secrets the chart generates: a token,
// a 32-byte secret key in cluster mode, NATS credentials when the
// embedded server's port is a Service; none where the values name one.
func TestGeneratedSecrets(t *testing.T) {
	ch := loadChart(t)
	r := render(t, ch, filepath.Join(chartDir, "examples", "full.yaml"))
	key := get[*corev1.Secret](t, r, "Secret/hj-hookjet-secret-key")
	if b, err := base64.StdEncoding.DecodeString(string(key.Data["secret-key"])); err != nil || len(b) != 32 {
		t.Errorf("secret-key %q: want 32 bytes in standard base64 (%v)", key.Data["secret-key"], err)
	}
	if key.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Error("the generated secret key is not kept on uninstall")
	}
	if tok := get[*corev1.Secret](t, r, "Secret/hj-hookjet-admin"); len(tok.Data["token"]) < 32 {
		t.Errorf("admin token %d bytes", len(tok.Data["token"]))
	}
	r = render(t, ch, filepath.Join(chartDir, "examples", "embedded.yaml"))
	nats := get[*corev1.Secret](t, r, "Secret/hj-hookjet-nats")
	if string(nats.Data["user"]) == "" || len(nats.Data["password"]) < 32 {
		t.Errorf("NATS credentials %q/%d bytes", nats.Data["user"], len(nats.Data["password"]))
	}
	if _, ok := r.objects["Service/hj-hookjet-nats"]; !ok {
		t.Error("embedded.yaml: no NATS Service")
	}
	r = render(t, ch, filepath.Join(chartDir, "examples", "cluster.yaml"))
	for _, k := range []string{"Secret/hj-hookjet-secret-key", "Secret/hj-hookjet-nats", "Service/hj-hookjet-nats"} {
		if _, ok := r.objects[k]; ok {
			t.Errorf("cluster.yaml renders %s; it names existing Secrets and has no embedded server", k)
		}
	}
}
