package deliver_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hookjet/hookjet/deliver"
)

func ExampleSigner_Sign() {
	// The Standard Webhooks specification's example.
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		panic(err)
	}
	s := deliver.NewSigner(key)
	fmt.Println(s.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`)))
	// Output: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}

func ExampleClassify() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, resp := range []*http.Response{
		{StatusCode: 204},
		{StatusCode: 302},
		{StatusCode: 410},
		{StatusCode: 422},
		{StatusCode: 429, Header: http.Header{"Retry-After": {"30"}}},
		{StatusCode: 503},
	} {
		o := deliver.Classify(resp, nil, now)
		fmt.Printf("%-12s %s\n", o.Class, o.Reason())
	}
	// Output:
	// success      HTTP 204 No Content
	// permanent    redirect not followed (HTTP 302)
	// gone         HTTP 410 Gone
	// permanent    HTTP 422 Unprocessable Entity
	// rate_limited HTTP 429 Too Many Requests (Retry-After 30s)
	// transient    HTTP 503 Service Unavailable
}
