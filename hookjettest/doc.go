// Package hookjettest runs hookjet inside an application's own Go tests: an
// embedded NATS server with JetStream and a whole hookjet (the same code as
// `hookjet serve`) in a temporary directory, delivering to loopback
// addresses such as an httptest server's, and stopped by t.Cleanup.
//
//	func TestPlacingAnOrderNotifiesTheCustomer(t *testing.T) {
//		hj := hookjettest.Start(t)
//		var got atomic.Int32
//		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
//		t.Cleanup(rcv.Close)
//		ep, _ := hj.AddEndpoint(rcv.URL, "order.*")
//
//		shop := orders.New(hj.NATSURL()) // the application publishes as in production
//		id := shop.Place(...)
//
//		hj.WaitDelivered(ep, id)
//	}
//
// [Start] returns once hookjet is delivering. [Hookjet.AddEndpoint] adds an
// endpoint with a fresh signing secret, [Hookjet.Publish] publishes an event
// as an application would (a request to hookjet.publish.<type>, answered
// once the event is stored), [Hookjet.WaitDelivered] waits until an endpoint
// answered 2xx to an event (and fails the test at once if the event was
// dead-lettered instead), and [Hookjet.DeadLetters] and
// [Hookjet.WaitDeadLetter] show the dead-letter stream. The application's
// own code connects to [Hookjet.NATSURL].
//
// Retries are fast by default (base 100ms, cap 1s, 5 attempts, timeout 5s)
// so that failing endpoints reach the dead-letter stream within a test;
// [WithSettings] and [WithRetry] change that, [WithConfig] any other key.
//
// The embedded server syncs lazily (nats.sync: 2m) for speed: unlike
// `hookjet serve`, whose default nats.sync: always fsyncs every event before
// its PubAck, a test's events would not survive a power cut, which a test
// does not need. WithConfig(func(c *config.Config) { c.NATS.Sync = "always" })
// restores the production policy.
//
// A Start costs about 35-80ms on a quiet 2-core machine once the test binary
// is warm, up to ~100ms on a busy one, ~25ms with TMPDIR on a tmpfs such as
// /dev/shm (BenchmarkStart); every Hookjet is independent, so tests may run
// in parallel.
package hookjettest
