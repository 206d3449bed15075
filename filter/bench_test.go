package filter_test

import (
	"fmt"
	"testing"

	"github.com/hookjet/hookjet/filter"
)

// BenchmarkMatch is the cost of one evaluation on an event whose payload the
// event's filters already parsed.
func BenchmarkMatch(b *testing.B) {
	for _, expr := range []string{
		`type == "order.created"`,
		`data.amount > 1000 && data.currency == "EUR"`,
		`has(data.customer) && data.customer.tier == "gold" && headers["x-region"] == "eu"`,
	} {
		b.Run(expr, func(b *testing.B) {
			f, err := filter.Compile(expr, filter.Options{})
			if err != nil {
				b.Fatal(err)
			}
			ev := filter.NewEvent(order(), filter.Limits{Budget: 1 << 60})
			b.ReportAllocs()
			for b.Loop() {
				if ok, err := f.Match(ev); !ok || err != nil {
					b.Fatalf("Match = %v, %v", ok, err)
				}
			}
		})
	}
}

// BenchmarkEvent10000Endpoints is one event through the filters of 10,000
// endpoints (one expression each, 100 distinct ones): a new Event per
// iteration, whose payload is parsed once for all of them.
func BenchmarkEvent10000Endpoints(b *testing.B) {
	const endpoints = 10_000
	filters := make([]*filter.Filter, endpoints)
	for i := range filters {
		f, err := filter.Compile(fmt.Sprintf(`data.amount > %d.0 && data.currency == "EUR"`, i%100*20), filter.Options{})
		if err != nil {
			b.Fatal(err)
		}
		filters[i] = f
	}
	in := order()
	b.ReportAllocs()
	for b.Loop() {
		ev := filter.NewEvent(in, filter.Limits{})
		matched := 0
		for _, f := range filters {
			if ok, err := f.Match(ev); err != nil {
				b.Fatal(err)
			} else if ok {
				matched++
			}
		}
		if ev.Parses() != 1 {
			b.Fatalf("the payload was parsed %d times", ev.Parses())
		}
		if matched != 7500 {
			b.Fatalf("matched %d", matched)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/endpoints, "ns/filter")
}
