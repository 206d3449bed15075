package config_test

import (
	"errors"
	"fmt"

	"github.com/hookjet/hookjet/config"
)

func ExampleParse() {
	cfg, err := config.Parse([]byte(`
defaults:
  retry: {max_attempts: 10}
endpoints:
  - id: crm
    url: https://crm.example.com/hooks
    secrets: [env:CRM_SECRET]
    events: ["order.*", "order.created", "lead.created"]
    retry: {max_attempts: 4}
`), func(name string) string {
		if name == "CRM_SECRET" {
			return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		}
		return ""
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ep := cfg.Endpoints[0]
	fmt.Println(ep.ID, ep.Events, ep.Retry.MaxAttempts, ep.Retry.Base, ep.Secrets)
	// Output: crm [order.* lead.created] 4 5s [[redacted]]
}

func ExampleParse_errors() {
	_, err := config.Parse([]byte(`
worker:
  concurrency: 0
endpoints:
  - id: crm
    url: ftp://crm.example.com
    secrets: [whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw]
    retyr: {max_attempts: 4}
`), nil)
	fmt.Println(errors.Is(err, config.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// endpoints[0].retyr: unknown key (did you mean "retry"?) (line 8)
	// worker.concurrency: must be between 1 and 100000, got 0 (line 3)
	// endpoints[0].url: scheme must be http or https (line 6)
}

func ExampleMatchEvent() {
	fmt.Println(config.MatchEvent("order.*", "order.created"))
	fmt.Println(config.MatchEvent("order.*", "order.created.v2"))
	fmt.Println(config.MatchEvent("order.>", "order.created.v2"))
	// Output:
	// true
	// false
	// true
}

func ExampleSecret() {
	s := config.NewSecret("s3cret")
	fmt.Printf("%v %s %#v\n", s, s, s)
	fmt.Println(len(s.Reveal()))
	// Output:
	// [redacted] [redacted] [redacted]
	// 6
}
