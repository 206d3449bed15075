// Package webhook is the receiving side of Standard Webhooks
// (https://www.standardwebhooks.com), for applications that receive
// hookjet's deliveries.
//
// A delivery carries three headers: webhook-id (the event id, identical on
// every retry and replay), webhook-timestamp (unix seconds of the attempt)
// and webhook-signature (one or more space-separated "v1,<base64>" entries,
// one per active secret). The signature is the standard base64 encoding of
// HMAC-SHA256(secret, id + "." + timestamp + "." + body).
//
// A [Verifier] checks those headers against one or more secrets (several
// secrets let a sender rotate without downtime) and rejects timestamps
// further than a tolerance from now, which bounds replay. A [Deduper]
// remembers webhook ids for a while so that an at-least-once delivery causes
// its effect at most once. [Handler] combines both as HTTP middleware:
//
//	v, err := webhook.NewVerifier([]string{os.Getenv("WEBHOOK_SECRET")})
//	if err != nil {
//		return err
//	}
//	d := webhook.NewDeduper(24*time.Hour, 100_000)
//	http.Handle("POST /hooks", webhook.Handler(v, d, processEvent))
//
// The package has no dependency on the rest of hookjet and can be used with
// any Standard Webhooks sender.
package webhook
