package transform_test

import (
	"time"

	"testing"

	"github.com/hookjet/hookjet/transform"
)

// tenLines is the 10-line script.
const tenLines = `function handler(webhook) {
  const p = webhook.payload;
  const lines = p.lines || [];
  webhook.payload = {
    text: "Order " + p.id + " of " + p.amount,
    skus: lines.map(function (l) { return l.sku; }),
    tenant: webhook.event.tenant,
  };
  webhook.headers["X-Event"] = webhook.eventType;
  return webhook;
}`

// BenchmarkRun is one run of a 10-line script in a pooled runtime.
func BenchmarkRun(b *testing.B) {
	e := transform.New(transform.Options{})
	defer e.Close()
	s, err := transform.Compile(tenLines)
	if err != nil {
		b.Fatal(err)
	}
	in := input()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Run(b.Context(), "ep", s, in, transform.Limits{Timeout: time.Second}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunParallel is runs of 10 endpoints at once.
func BenchmarkRunParallel(b *testing.B) {
	e := transform.New(transform.Options{})
	defer e.Close()
	s, err := transform.Compile(tenLines)
	if err != nil {
		b.Fatal(err)
	}
	in := input()
	eps := []string{"e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := e.Run(b.Context(), eps[i%len(eps)], s, in, transform.Limits{Timeout: time.Second}); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkCompile is Compile of the 10-line script (at create and change).
func BenchmarkCompile(b *testing.B) {
	for b.Loop() {
		if _, err := transform.Compile(tenLines); err != nil {
			b.Fatal(err)
		}
	}
}
