package webhook_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/hookjet/hookjet/webhook"
)

func TestVerifyMessage(t *testing.T) {
	ts := strconv.FormatInt(specTS, 10)
	body := []byte(specBody)
	old := webhook.WithClock(func() time.Time { return specTime.Add(48 * time.Hour) })
	for _, tt := range []struct {
		name string
		h    map[string][]string
		opts []webhook.Option
		want error
	}{
		{"lower case, as NATS and Kafka carry them", map[string][]string{"webhook-id": {specID}, "webhook-timestamp": {ts}, "webhook-signature": {specSig}}, nil, nil},
		{"canonical case", map[string][]string{"Webhook-Id": {specID}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {specSig}}, nil, nil},
		{"read two days later with the default tolerance", map[string][]string{"webhook-id": {specID}, "webhook-timestamp": {ts}, "webhook-signature": {specSig}}, []webhook.Option{old}, webhook.ErrTimestampTooOld},
		{"read two days later with a week's tolerance", map[string][]string{"webhook-id": {specID}, "webhook-timestamp": {ts}, "webhook-signature": {specSig}}, []webhook.Option{old, webhook.WithTolerance(7 * 24 * time.Hour)}, nil},
		{"no signature", map[string][]string{"webhook-id": {specID}, "webhook-timestamp": {ts}}, nil, webhook.ErrMissingHeader},
		{"another id", map[string][]string{"webhook-id": {"msg_other"}, "webhook-timestamp": {ts}, "webhook-signature": {specSig}}, nil, webhook.ErrNoMatchingSignature},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]webhook.Option{webhook.WithClock(func() time.Time { return specTime })}, tt.opts...)
			v, err := webhook.NewVerifier([]string{specSecret}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := v.VerifyMessage(tt.h, body); !errors.Is(err, tt.want) {
				t.Fatalf("VerifyMessage = %v, want %v", err, tt.want)
			}
			if err := v.VerifyValues(first(tt.h, "webhook-id", "Webhook-Id"), first(tt.h, "webhook-timestamp", "Webhook-Timestamp"), first(tt.h, "webhook-signature", "Webhook-Signature"), body); !errors.Is(err, tt.want) {
				t.Fatalf("VerifyValues = %v, want %v", err, tt.want)
			}
		})
	}
}

func first(h map[string][]string, names ...string) string {
	for _, n := range names {
		if len(h[n]) > 0 {
			return h[n][0]
		}
	}
	return ""
}
