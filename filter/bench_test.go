package filter_test

import (
	"fmt"
	"testing"

	"github.com/hookjet/hookjet/filter"
)

// BenchmarkMatch is the cost of one evaluation on an event whose payload
// another filter already parsed (every iteration a fresh event: an event
// remembers the outcome of an expression it has seen).
func BenchmarkMatch(b *testing.B) {
	warm, err := filter.Compile(`has(data.amount) && size(headers) >= 0`, filter.Options{})
	if err != nil {
		b.Fatal(err)
	}
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
			evs := make([]*filter.Event, 1024)
			b.ReportAllocs()
			for i := range b.N {
				if i%len(evs) == 0 {
					b.StopTimer()
					for j := range evs {
						evs[j] = filter.NewEvent(order(), filter.Limits{})
						if ok, err := warm.Match(evs[j]); !ok || err != nil {
							b.Fatalf("warm Match = %v, %v", ok, err)
						}
					}
					b.StartTimer()
				}
				if ok, err := f.Match(evs[i%len(evs)]); !ok || err != nil {
					b.Fatalf("Match = %v, %v", ok, err)
				}
			}
		})
	}
}

// BenchmarkEvent10000Endpoints is one event through the filters of 10,000
// endpoints, one expression each: 100 distinct ones (endpoints sharing an
// expression share its evaluation), or all distinct (10,000 evaluations). A
// new Event per iteration, whose payload is parsed once for all of them.
func BenchmarkEvent10000Endpoints(b *testing.B) {
	for _, distinct := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("distinct=%d", distinct), func(b *testing.B) { benchEvent(b, distinct) })
	}
}

func benchEvent(b *testing.B, distinct int) {
	const endpoints = 10_000
	filters := make([]*filter.Filter, endpoints)
	for i := range filters {
		// amount is 1500: the expressions up to > 1499 match, 75 in 100.
		f, err := filter.Compile(fmt.Sprintf(`data.amount > %d.0 && data.currency == "EUR"`, i%distinct*2000/distinct), filter.Options{})
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
