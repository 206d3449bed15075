package api

import (
	"fmt"
	"strings"
	"time"
)

// Describe says in words why deliveries to an endpoint wait and until when,
// for people: "endpoint gone is disabled (answered 410 Gone): enable it to
// deliver".
func Describe(wt Wait, now time.Time) string {
	until := ""
	if wt.Until != nil {
		until = fmt.Sprintf(" until %s (in %s)", wt.Until.UTC().Format(time.RFC3339), wt.Until.Sub(now).Round(time.Second))
	}
	detail := ""
	if wt.Detail != "" {
		detail = " (" + wt.Detail + ")"
	}
	ep := "endpoint " + wt.Endpoint
	if wt.Endpoint == "" {
		ep = "the endpoint"
	}
	switch wt.Reason {
	case WaitDisabled:
		return fmt.Sprintf("%s is disabled%s: nothing goes until it is enabled (hookjet endpoints --enable %s)", ep, detail, wt.Endpoint)
	case WaitBreakerOpen:
		return fmt.Sprintf("%s: circuit breaker open%s%s; 'hookjet endpoints reset %s' closes it now", ep, until, detail, wt.Endpoint)
	case WaitHalfOpen:
		return fmt.Sprintf("%s: circuit breaker half-open%s", ep, detail)
	case WaitHeld:
		return fmt.Sprintf("%s: held by the receiver's Retry-After%s%s", ep, until, detail)
	case WaitRateLimited:
		return fmt.Sprintf("%s: rate limited%s%s", ep, until, detail)
	case WaitInFlightFull:
		return fmt.Sprintf("%s: all in-flight slots busy%s", ep, detail)
	case WaitTaken:
		return fmt.Sprintf("%s: deliveries taken by a hookjet process that has not settled them (stopped uncleanly, or another one still delivering them); NATS gives them back%s%s", ep, until, detail)
	}
	return strings.TrimSpace(fmt.Sprintf("%s: %s%s%s", ep, wt.Reason, until, detail))
}
