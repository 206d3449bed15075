package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const (
	alertsPath    = "prometheus/alerts.yml"
	dashboardPath = "grafana/hookjet.json"
)

// metric describes one metric hookjet exports.
type metric struct {
	labels    []string
	histogram bool
}

// metrics is the contract: every hookjet_* series hookjet exports, with its
// labels. Keep it in step with the metrics code and DESIGN.md.
var metrics = map[string]metric{
	"hookjet_attempts_total":             {labels: []string{"endpoint", "class"}},
	"hookjet_attempt_duration_seconds":   {labels: []string{"endpoint"}, histogram: true},
	"hookjet_first_attempts_total":       {labels: []string{"endpoint", "class"}},
	"hookjet_dead_letters_total":         {labels: []string{"endpoint", "reason"}},
	"hookjet_deferrals_total":            {labels: []string{"endpoint", "cause"}},
	"hookjet_breaker_state":              {labels: []string{"endpoint"}},
	"hookjet_pending":                    {labels: []string{"endpoint"}},
	"hookjet_oldest_pending_age_seconds": {},
	"hookjet_duplicates_total":           {labels: []string{"stage"}},
	"hookjet_events_published_total":     {},
	"hookjet_dlq_messages":               {},
	"hookjet_latency_p95_seconds":        {labels: []string{"endpoint"}},
	"hookjet_inbound_requests_total":     {labels: []string{"source", "outcome"}},
}

// targetLabels are attached by Prometheus to every scraped series.
var targetLabels = []string{"job", "instance"}

var (
	// selectorRE matches a hookjet metric name and its optional {matchers}.
	selectorRE = regexp.MustCompile(`\b(hookjet_[a-zA-Z0-9_:]*)\s*(\{[^}]*\})?`)
	// matcherRE matches the label name of one matcher inside {...}.
	matcherRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	// groupingRE matches by (...) and without (...) clauses.
	groupingRE = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	// quotedRE matches a PromQL double-quoted string.
	quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// selector is one hookjet metric reference in a PromQL expression.
type selector struct {
	name   string   // as written, e.g. hookjet_attempt_duration_seconds_bucket
	base   string   // without _bucket/_sum/_count
	suffix string   // the stripped suffix, if any
	labels []string // label names in its matchers
}

// parseSelectors finds the hookjet metrics an expression refers to.
func parseSelectors(expr string) []selector {
	expr = quotedRE.ReplaceAllString(expr, `""`)
	var out []selector
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		s := selector{name: m[1], base: m[1]}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(m[1], suffix); ok {
				s.base, s.suffix = base, suffix
				break
			}
		}
		for _, l := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			s.labels = append(s.labels, l[1])
		}
		out = append(out, s)
	}
	return out
}

// groupingLabels returns the labels named in by (...) and without (...).
func groupingLabels(expr string) []string {
	var out []string
	for _, m := range groupingRE.FindAllStringSubmatch(expr, -1) {
		for l := range strings.SplitSeq(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// checkExpr returns one problem per unknown metric or label in expr.
func checkExpr(expr string) []string {
	var problems []string
	allowed := slices.Clone(targetLabels)
	for _, s := range parseSelectors(expr) {
		m, ok := metrics[s.base]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("unknown metric %s", s.name))
			continue
		case s.suffix != "" && !m.histogram:
			problems = append(problems, fmt.Sprintf("%s: %s is not a histogram", s.name, s.base))
			continue
		}
		labels := slices.Concat(targetLabels, m.labels)
		if s.suffix == "_bucket" {
			labels = append(labels, "le")
		}
		for _, l := range s.labels {
			if !slices.Contains(labels, l) {
				problems = append(problems, fmt.Sprintf("%s has no label %q", s.name, l))
			}
		}
		allowed = append(allowed, labels...)
	}
	for _, l := range groupingLabels(expr) {
		if !slices.Contains(allowed, l) {
			problems = append(problems, fmt.Sprintf("grouping by %q, which none of the expression's metrics has", l))
		}
	}
	return problems
}

func TestParseSelectors(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want []selector
	}{
		{name: "plain", expr: "hookjet_pending", want: []selector{{name: "hookjet_pending", base: "hookjet_pending"}}},
		{name: "matchers", expr: `rate(hookjet_attempts_total{endpoint=~"$endpoint", class!="x=y"}[5m])`, want: []selector{
			{name: "hookjet_attempts_total", base: "hookjet_attempts_total", labels: []string{"endpoint", "class"}},
		}},
		{name: "histogram bucket", expr: `histogram_quantile(0.95, sum by (le) (rate(hookjet_attempt_duration_seconds_bucket[5m])))`, want: []selector{
			{name: "hookjet_attempt_duration_seconds_bucket", base: "hookjet_attempt_duration_seconds", suffix: "_bucket"},
		}},
		{name: "two metrics", expr: "hookjet_duplicates_total / hookjet_attempts_total_count", want: []selector{
			{name: "hookjet_duplicates_total", base: "hookjet_duplicates_total"},
			{name: "hookjet_attempts_total_count", base: "hookjet_attempts_total", suffix: "_count"},
		}},
		{name: "job label value is not a metric", expr: `up{job="hookjet_x"} == 0`, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseSelectors(tt.expr)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("parseSelectors(%q) =\n%v, want\n%v", tt.expr, got, tt.want)
			}
		})
	}
}

func TestCheckExpr(t *testing.T) {
	tests := []struct {
		name     string
		expr     string
		problems int
	}{
		{name: "valid", expr: `sum by (endpoint, class) (rate(hookjet_attempts_total{endpoint="a"}[5m]))`},
		{name: "valid histogram", expr: `histogram_quantile(0.9, sum by (le) (rate(hookjet_attempt_duration_seconds_bucket[5m])))`},
		{name: "unknown metric", expr: `rate(hookjet_attempt_total[5m])`, problems: 1},
		{name: "suffix on a counter", expr: `hookjet_pending_count`, problems: 1},
		{name: "unknown label", expr: `hookjet_oldest_pending_age_seconds{endpoint="a"}`, problems: 1},
		{name: "le outside buckets", expr: `hookjet_attempt_duration_seconds_sum{le="1"}`, problems: 1},
		{name: "grouping by a missing label", expr: `sum by (reason) (hookjet_deferrals_total)`, problems: 1},
		{name: "target labels", expr: `max by (job, instance) (hookjet_dlq_messages{instance="x"})`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkExpr(tt.expr); len(got) != tt.problems {
				t.Errorf("checkExpr(%q) = %q, want %d problem(s)", tt.expr, got, tt.problems)
			}
		})
	}
}

// ruleFile is the Prometheus rule file format, strictly: unknown keys fail.
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert         string            `yaml:"alert"`
	Record        string            `yaml:"record"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for"`
	KeepFiringFor string            `yaml:"keep_firing_for"`
	Labels        map[string]string `yaml:"labels"`
	Annotations   map[string]string `yaml:"annotations"`
}

func loadRules(t *testing.T) []rule {
	t.Helper()
	data, err := os.ReadFile(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f ruleFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", alertsPath, err)
	}
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		t.Fatalf("%s: no rules", alertsPath)
	}
	return rules
}

// dashboardExprs returns every query string in the dashboard: panel target
// expressions and templating queries, keyed by where they were found.
func dashboardExprs(t *testing.T, dash any) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if s, ok := child.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					out[path+"."+k] = s
					continue
				}
				walk(path+"."+k, child)
			}
		case []any:
			for i, child := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), child)
			}
		}
	}
	walk("$", dash)
	return out
}

func loadDashboard(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return dash
}

func TestMetricNames(t *testing.T) {
	exprs := map[string]string{}
	for _, r := range loadRules(t) {
		exprs[alertsPath+": "+r.Alert+r.Record] = r.Expr
	}
	for where, e := range dashboardExprs(t, loadDashboard(t)) {
		exprs[dashboardPath+": "+where] = e
	}
	used := map[string]bool{}
	for _, where := range slices.Sorted(maps.Keys(exprs)) {
		e := exprs[where]
		for _, p := range checkExpr(e) {
			t.Errorf("%s: %s\n\t%s", where, p, e)
		}
		for _, s := range parseSelectors(e) {
			used[s.base] = true
		}
	}
	// Not a requirement of the contract, but a metric nobody looks at is
	// usually a panel someone forgot.
	for _, name := range slices.Sorted(maps.Keys(metrics)) {
		if !used[name] {
			t.Errorf("metric %s is used by no alert and no panel", name)
		}
	}
}

func TestAlertRules(t *testing.T) {
	want := map[string]time.Duration{
		"HookjetDown":                     2 * time.Minute,
		"HookjetBacklogOld":               5 * time.Minute,
		"HookjetDeadLettersGrowing":       0,
		"HookjetBreakerOpenTooLong":       30 * time.Minute,
		"HookjetEndpointSlow":             15 * time.Minute,
		"HookjetDuplicateRate":            15 * time.Minute,
		"HookjetInboundSignatureFailures": 10 * time.Minute,
		"HookjetInboundWindowRejections":  15 * time.Minute,
		"HookjetInboundDuplicateRate":     15 * time.Minute,
	}
	seen := map[string]bool{}
	for _, r := range loadRules(t) {
		t.Run(r.Alert, func(t *testing.T) {
			if r.Alert == "" {
				t.Fatalf("recording rule %q: this file holds alerts only", r.Record)
			}
			if seen[r.Alert] {
				t.Errorf("duplicate alert")
			}
			seen[r.Alert] = true
			if strings.TrimSpace(r.Expr) == "" {
				t.Error("empty expr")
			}
			var got time.Duration
			if r.For != "" {
				var err error
				if got, err = time.ParseDuration(r.For); err != nil {
					t.Errorf("for: %v", err)
				}
			}
			if w, ok := want[r.Alert]; ok && got != w {
				t.Errorf("for = %v, want %v", got, w)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("severity = %q, want warning or critical", s)
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("annotation %s is missing", a)
				}
			}
		})
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("alert %s is missing", name)
		}
	}
}

// panel is the part of a Grafana panel the test checks.
type panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	GridPos    struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func TestDashboard(t *testing.T) {
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string  `json:"uid"`
		Title      string  `json:"title"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Errorf("uid %q, title %q: both are required for provisioning", dash.UID, dash.Title)
	}
	var vars []string
	for _, v := range dash.Templating.List {
		vars = append(vars, v.Name)
	}
	for _, v := range []string{"datasource", "endpoint"} {
		if !slices.Contains(vars, v) {
			t.Errorf("template variable %q is missing", v)
		}
	}
	ids := map[int]bool{}
	titles := map[string]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v is outside the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if titles[p.Title] {
			t.Errorf("panel title %q is used twice", p.Title)
		}
		titles[p.Title] = true
		if !bytes.Contains(p.Datasource, []byte("${datasource}")) {
			t.Errorf("panel %q: datasource %s, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.RefID == "" || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: target %+v needs a refId and an expr", p.Title, tg)
			}
		}
	}
	// The panels the operations guide promises.
	for _, title := range []string{
		"Attempts by class", "p95 attempt duration", "Pending per endpoint", "Oldest pending age",
		"Breaker state", "Dead letters by reason", "Deferrals by cause", "Duplicates by stage",
	} {
		if !titles[title] {
			t.Errorf("panel %q is missing; have %q", title, slices.Sorted(maps.Keys(titles)))
		}
	}
}
