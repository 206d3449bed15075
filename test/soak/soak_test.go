package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestPlanIsReproducibleAndSpreadsKinds(t *testing.T) {
	const n, d = 30, 10 * time.Minute
	a := plan(42, d, n, allKinds, 3, 3)
	if b := plan(42, d, n, allKinds, 3, 3); !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two schedules")
	}
	if c := plan(43, d, n, allKinds, 3, 3); reflect.DeepEqual(a, c) {
		t.Fatal("two seeds gave the same schedule")
	}
	if len(a) != n {
		t.Fatalf("%d faults, want %d", len(a), n)
	}
	seen := map[string]int{}
	for i, f := range a {
		seen[f.Kind]++
		if f.At < 0 || f.At+f.For > d {
			t.Errorf("fault %d (%s) not within the %s run", i, f, d)
		}
		if i > 0 && a[i-1].At+a[i-1].For >= f.At {
			t.Errorf("fault %d (%s) starts before fault %d (%s) has ended", i, f, i-1, a[i-1])
		}
		if f.For <= 0 {
			t.Errorf("fault %d lasts %s", i, f.For)
		}
		switch f.Kind {
		case powerCut:
			if f.Target != powerCutNode {
				t.Errorf("fault %d: power cut of node %d, not of the one on the power-cut filesystem", i, f.Target)
			}
		case natsKill, natsPause:
			if f.Target < 0 || f.Target > 2 {
				t.Errorf("fault %d: node %d", i, f.Target)
			}
		case latency:
			if f.Delay <= 0 {
				t.Errorf("fault %d: latency without a delay", i)
			}
		}
	}
	for _, k := range allKinds {
		if lo := n / len(allKinds); seen[k] < lo || seen[k] > lo+1 {
			t.Errorf("%s: %d faults, want %d or %d", k, seen[k], lo, lo+1)
		}
	}
	for seed := range uint64(10) {
		long := 0
		for _, f := range plan(seed, d, n, allKinds, 3, 3) {
			if f.Kind == hookjetPause && f.For >= longPause {
				long++
			}
		}
		if long == 0 {
			t.Errorf("seed %d: no hookjet-pause outlasts AckWait in a 10-minute schedule", seed)
		}
	}
	short := plan(7, 75*time.Second, 6, []string{natsKill, hookjetPause}, 3, 2)
	for _, f := range short {
		if !slices.Contains([]string{natsKill, hookjetPause}, f.Kind) {
			t.Errorf("kind %s was not asked for", f.Kind)
		}
		if f.Kind == hookjetPause && (f.Target > 1 || f.For >= longPause) {
			t.Errorf("%s: of 2 hookjets, short in a 75 s run", f)
		}
	}
}

func TestParseKinds(t *testing.T) {
	if _, err := parseKinds("nats-kill,bogus"); err == nil {
		t.Error("an unknown kind was accepted")
	}
	if _, err := parseKinds(" , "); err == nil {
		t.Error("an empty list was accepted")
	}
	got, err := parseKinds("latency, partition")
	if err != nil || !reflect.DeepEqual(got, []string{latency, partition}) {
		t.Errorf("got %v, %v", got, err)
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		pattern, typ string
		want         bool
	}{
		{">", "order.created", true},
		{">", "a", true},
		{"order.*", "order.created", true},
		{"order.*", "order.created.v2", false},
		{"order.*", "order", false},
		{"invoice.>", "invoice.sent", true},
		{"invoice.>", "invoice", false},
		{"order.paid", "order.paid", true},
		{"order.paid", "order.created", false},
	}
	for _, tt := range tests {
		if got := matches(tt.pattern, tt.typ); got != tt.want {
			t.Errorf("matches(%q, %q) = %v, want %v", tt.pattern, tt.typ, got, tt.want)
		}
	}
}

func TestCheckCountsLossDeadLettersAndDuplicates(t *testing.T) {
	dir := t.TempDir()
	ackedPath, logPath := filepath.Join(dir, "acked.log"), filepath.Join(dir, "received.log")
	// e1 order.paid: all, orders, billing; e2 user.signup: all; e3
	// invoice.sent: all, billing.
	writeFile(t, ackedPath, "e1 order.paid\ne2 user.signup\ne3 invoice.sent\n")
	writeFile(t, logPath, ""+
		"ok all e1 1\nok orders e1 2\nfail billing e1 3\nok billing e1 4\nok billing e1 5\n"+ // billing e1 twice
		"ok all e2 6\n"+
		"ok all e3 7\nfail billing e3 8\n"+ // billing e3 never arrives
		"ok all e9 9\n"+ // an event the producer never saw acknowledged
		"bad all e2 10\n")
	acked, err := readAcked(ackedPath)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := readReceiverLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if rl.failed != 2 || rl.bad != 1 {
		t.Errorf("failed %d, bad %d; want 2, 1", rl.failed, rl.bad)
	}
	pairs := owed(acked, endpoints)
	v := check(pairs, rl, map[string]string{}, 0)
	want := verdict{Owed: 6, Delivered: 5, Lost: 1, Duplicates: 1, DupByEndpoint: map[string]int{"billing": 1}, Unowed: 1, ByReason: map[string]int{}, LostSample: []string{"billing e3"}}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %+v\nwant %+v", v, want)
	}
	if f := v.failures(rl, nil); len(f) != 3 {
		t.Errorf("failures %q: want the loss, the duplicates over the bound and the bad signature", f)
	}
	// The repeated delivery (billing e1 at 5 ms) happened after the first
	// fault (began at 4 ms) and before the second.
	windows := []faultWindow{{"f1", time.UnixMilli(4)}, {"f2", time.UnixMilli(6)}}
	if got, over := dupsAfter(rl.dupTimes, windows, 1); !reflect.DeepEqual(got, []string{"f1: billing 1"}) || len(over) != 0 {
		t.Errorf("dupsAfter: %q, over %q", got, over)
	}
	if _, over := dupsAfter(append(rl.dupTimes, dupAt{"billing", time.UnixMilli(5)}), windows, 1); len(over) != 1 {
		t.Errorf("two duplicates after f1 at billing, bound 1: over %q", over)
	}
	// Dead-lettered with a reason, the same delivery is accounted for.
	v = check(pairs, rl, map[string]string{"billing e3": "exhausted"}, 1)
	if v.Lost != 0 || v.DeadLettered != 1 || v.ByReason["exhausted"] != 1 {
		t.Fatalf("with the dead letter: %+v", v)
	}
	if f := v.failures(receiverLog{}, nil); len(f) != 0 {
		t.Errorf("failures %q: want none", f)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
