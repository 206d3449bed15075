package deliver_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/hookjet/hookjet/deliver"
)

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
