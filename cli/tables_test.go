package cli

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// An endpoint without latency samples shows "-" for its percentiles in
// `endpoints` and `endpoints show`, never 0.0ms (issue 47, walkthrough 8).
func TestEndpointsWithoutSamplesShowNoLatency(t *testing.T) {
	api := &answers{by: map[string][2]string{
		"GET /api/v1/endpoints": {"200", `{"endpoints":[
			{"id":"fresh","url":"https://a.example.com/h","breaker":{"state":"closed"},"latency_ms":{"p50":0,"p95":0,"p99":0,"samples":0}},
			{"id":"busy","url":"https://b.example.com/h","breaker":{"state":"closed"},"latency_ms":{"p50":4.25,"p95":9,"p99":12,"samples":3}}],"next":""}`},
		"GET /api/v1/endpoints/fresh": {"200", `{"id":"fresh","url":"https://a.example.com/h","source":"api","breaker":{"state":"closed"},"latency_ms":{"samples":0}}`},
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	code, out, errOut := runAgainst(t, srv, "endpoints")
	if code != 0 {
		t.Fatalf("endpoints: exit %d %q", code, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 6 && f[0] == "fresh":
			if f[4] != "-" || f[5] != "-" || f[6] != "-" {
				t.Errorf("fresh endpoint without samples: P50 P95 P99 = %v, want - - -\n%s", f[4:7], out)
			}
		case len(f) > 6 && f[0] == "busy":
			if f[4] != "4.2ms" && f[4] != "4.3ms" || f[5] != "9.0ms" || f[6] != "12.0ms" {
				t.Errorf("busy endpoint: P50 P95 P99 = %v, want 4.2ms 9.0ms 12.0ms\n%s", f[4:7], out)
			}
		}
	}
	if strings.Contains(out, "0.0ms") {
		t.Errorf("endpoints prints 0.0ms for an endpoint without samples:\n%s", out)
	}
	code, out, errOut = runAgainst(t, srv, "endpoints", "show", "fresh")
	if code != 0 {
		t.Fatalf("endpoints show: exit %d %q", code, errOut)
	}
	if strings.Contains(out, "0.0ms") || !regexp.MustCompile(`(?m)^latency +- `).MatchString(out) {
		t.Errorf("endpoints show of an endpoint without samples, want latency -:\n%s", out)
	}
}

// `events show` prints an attempt without a response as "-", not as an
// empty quoted string, and the dead-letter record, which is no request of
// its own, without repeating the last attempt's number (issue 47,
// walkthrough 8).
func TestEventsShowRowsSayWhatTheyHold(t *testing.T) {
	api := &answers{by: map[string][2]string{
		"GET /api/v1/events/evt_1": {"200", `{"id":"evt_1","type":"order.created","deliveries":[{"endpoint":"crm","number":1,"trigger":"delivery","state":"dead_letter","attempts":[
			{"event_id":"evt_1","endpoint":"crm","attempt":1,"trigger":"delivery","started_at":"2026-01-02T03:04:05Z","duration_ms":3.5,"status":0,"class":"transient","error":"connection refused"},
			{"event_id":"evt_1","endpoint":"crm","attempt":2,"trigger":"retry","started_at":"2026-01-02T03:04:06Z","duration_ms":4,"status":503,"class":"transient","error":"HTTP 503","response":"try later"},
			{"event_id":"evt_1","endpoint":"crm","attempt":2,"trigger":"retry","started_at":"2026-01-02T03:04:07Z","status":503,"class":"dead_letter","reason":"exhausted","error":"HTTP 503"}]}]}`},
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	code, out, errOut := runAgainst(t, srv, "events", "show", "evt_1")
	if code != 0 {
		t.Fatalf("events show: exit %d %q", code, errOut)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasPrefix(f[0], "2026-") {
			rows[f[0]] = f
		}
	}
	first, second, dead := rows["2026-01-02T03:04:05.000Z"], rows["2026-01-02T03:04:06.000Z"], rows["2026-01-02T03:04:07.000Z"]
	if first == nil || second == nil || dead == nil {
		t.Fatalf("want three rows:\n%s", out)
	}
	if first[1] != "1" || second[1] != "2" {
		t.Errorf("attempt numbers %q %q, want 1 2:\n%s", first[1], second[1], out)
	}
	if dead[1] != "-" {
		t.Errorf("the dead-letter row's # is %q, want - (it is not a third attempt, nor the second again):\n%s", dead[1], out)
	}
	if last := first[len(first)-1]; last != "-" {
		t.Errorf("an attempt without a response ends in %q, want -:\n%s", last, out)
	}
	if strings.Contains(out, `""`) {
		t.Errorf("a row prints an empty quoted string:\n%s", out)
	}
	if !strings.Contains(out, `"try later"`) {
		t.Errorf("the response excerpt is not shown:\n%s", out)
	}
}
