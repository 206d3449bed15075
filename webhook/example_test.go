package webhook_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/hookjet/hookjet/webhook"
)

func ExampleVerifier_Verify() {
	// The example from the Standard Webhooks specification. A real receiver
	// leaves out WithClock.
	v, err := webhook.NewVerifier(
		[]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		webhook.WithClock(func() time.Time { return time.Unix(1614265330, 0) }),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	h := http.Header{}
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")

	fmt.Println(v.Verify(h, []byte(`{"test": 2432232314}`)))
	fmt.Println(v.Verify(h, []byte(`{"test": 1}`)))
	// Output:
	// <nil>
	// webhook: no matching signature
}

func ExampleVerifier_VerifyMessage() {
	// A message hookjet published to a broker, as a NATS consumer reads it
	// (msg.Header, msg.Data), read two days later: the tolerance is the
	// consumer's to choose. A real consumer leaves out WithClock.
	v, err := webhook.NewVerifier(
		[]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		webhook.WithTolerance(7*24*time.Hour),
		webhook.WithClock(func() time.Time { return time.Unix(1614265330, 0).Add(48 * time.Hour) }),
	)
	if err != nil {
		panic(err)
	}
	header := map[string][]string{
		"webhook-id":         {"msg_p5jXN8AQM9LWM0D4loKWxJek"},
		"webhook-timestamp":  {"1614265330"},
		"webhook-signature":  {"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
		"Hookjet-Event-Type": {"test"},
	}
	fmt.Println(v.VerifyMessage(header, []byte(`{"test": 2432232314}`)))
	// Output: <nil>
}

func ExampleDeduper() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now } // a real receiver leaves out WithClock
	d := webhook.NewDeduper(24*time.Hour, 100_000, webhook.WithClock(clock))

	fmt.Println(d.First("msg_1")) // first delivery: process it
	fmt.Println(d.First("msg_1")) // a retry or replay: skip it
	now = now.Add(25 * time.Hour)
	fmt.Println(d.First("msg_1")) // past the TTL the id is new again
	// Output:
	// true
	// false
	// true
}

func ExampleHandler() {
	v, err := webhook.NewVerifier(
		[]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		webhook.WithClock(func() time.Time { return time.Unix(1614265330, 0) }),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	process := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("processing", r.Header.Get("webhook-id"))
	})
	h := webhook.Handler(v, webhook.NewDeduper(24*time.Hour, 100_000), process)

	deliver := func(signature string) {
		r := httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(`{"test": 2432232314}`))
		r.Header.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
		r.Header.Set("webhook-timestamp", "1614265330")
		r.Header.Set("webhook-signature", signature)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code)
	}
	deliver("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") // processed
	deliver("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") // duplicate
	deliver("v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=") // forged
	// Output:
	// processing msg_p5jXN8AQM9LWM0D4loKWxJek
	// 200
	// 200
	// 401
}
