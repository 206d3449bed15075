// Command bench is the end-to-end benchmark harness that `make bench` runs:
//
//	go run ./test/bench -out bench-results.json
//
// In one process and one run it measures the raw HTTP ceiling (a plain
// keep-alive Go client POSTing the same payloads to the same loopback
// receiver) and hookjet end to end (publish → JetStream file storage →
// fan-out → signed POST → 2xx → ack) in several scenarios, prints a table with
// every target of the issue marked PASS or MISS, and writes everything to a
// JSON file.
//
// Everything runs in this one process: the receiver (one net/http listener,
// one path per endpoint), hookjet started with cli.Start and its embedded
// NATS server (data in a temporary directory removed after each scenario), and
// the publisher (nats.go, asynchronous JetStream publishes with Nats-Msg-Id).
// CPU time and peak RSS are therefore those of the whole process, receiver and
// publisher included; the report says so wherever it matters.
//
// Scenarios (-scenarios, comma separated, default all):
//
//	raw            the raw ceiling: N goroutines POST to the receiver for a fixed time
//	healthy10      10 healthy endpoints, each event to exactly one endpoint
//	slow10         as healthy10, but endpoint e0 answers after 2 s
//	dead10         as healthy10, but endpoint e0 never answers (its timeout is 1 s)
//	endpoints1000  1,000 endpoints (max_in_flight 4), events round-robin
//	latency        10 endpoints at a fixed 2,000 events/s; publish→delivery percentiles
//	cost           10 endpoints at 116 events/s (10 million a day); CPU share of one core
//
// -quick runs smaller counts and shorter durations for a smoke test;
// -cpuprofile FILE writes a CPU profile of the measured window of the
// scenario named by -profile (default healthy10), -memprofile FILE a heap
// profile at the end of that window; -log FILE keeps hookjet's
// warnings and errors (otherwise they are only counted).
package main
