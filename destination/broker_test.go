package destination_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/destination"
)

func TestSharedKeyTellsCredentialsAndGuardApart(t *testing.T) {
	base := destination.SharedKey(false, "nats://n:4222", "user", "secret")
	for name, other := range map[string]string{
		"another password": destination.SharedKey(false, "nats://n:4222", "user", "other"),
		"the strict guard": destination.SharedKey(true, "nats://n:4222", "user", "secret"),
		"parts shifted":    destination.SharedKey(false, "nats://n:4222user", "", "secret"),
	} {
		if other == base {
			t.Errorf("%s shares the key of the same address", name)
		}
	}
	if again := destination.SharedKey(false, "nats://n:4222", "user", "secret"); again != base {
		t.Error("the same address and credentials got another key")
	}
	if len(base) != 64 {
		t.Errorf("key %q: want a hex SHA-256, showing no credential", base)
	}
}

func TestBrokerAttemptAndFail(t *testing.T) {
	strict := &net.Dialer{}
	b := destination.NewBroker(destination.BrokerConfig[*fakeConn]{
		Name: "nats", StrictDialer: strict, Close: func(*fakeConn) {},
		Classify: func(error) (destination.Class, time.Duration) { return destination.RateLimited, 3 * time.Second },
	})
	defer b.Close()
	if b.Dialer(true) != strict || b.Dialer(false) == nil || b.Dialer(false) == strict {
		t.Fatal("Dialer: want the strict dialer for tenants' endpoints, a plain one for operators'")
	}
	ctx, cancel, res := b.Attempt(context.Background(), 0)
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > destination.DefaultBrokerTimeout || time.Until(dl) < destination.DefaultBrokerTimeout/2 {
		t.Fatalf("an attempt without a timeout: deadline %v, want about %s", dl, destination.DefaultBrokerTimeout)
	}
	if res.Sent.IsZero() {
		t.Fatal("Attempt: the result has no send time")
	}
	cause := errors.New("maximum payload exceeded")
	got := b.Fail(res, cause)
	if got.Class != destination.RateLimited || got.RetryAfter != 3*time.Second || !errors.Is(got.Err, cause) || got.Reason != "nats: maximum payload exceeded" {
		t.Fatalf("Fail = %+v; want the classifier's class and wait, the error, and a reason naming the broker", got)
	}
}

// opts are a broker type's options, for ParseOptions.
type opts struct {
	Topic string `json:"topic"`
}

func (o *opts) Validate() error {
	if o.Topic == "" {
		return errors.New("destination.topic: required")
	}
	return nil
}

func TestParseOptionsDecodesAndValidates(t *testing.T) {
	o, err := destination.ParseOptions[opts]([]byte(`{"topic":"orders"}`))
	if err != nil || o.Topic != "orders" {
		t.Fatalf("ParseOptions = %+v, %v", o, err)
	}
	if _, err := destination.ParseOptions[opts]([]byte(`{}`)); err == nil || err.Error() != "destination.topic: required" {
		t.Fatalf("options that Validate refuses: %v, want its error", err)
	}
	if _, err := destination.ParseOptions[opts]([]byte(`{"topic":`)); err == nil || !strings.HasPrefix(err.Error(), "destination: ") {
		t.Fatalf("options that are not JSON: %v, want an error naming destination", err)
	}
}
