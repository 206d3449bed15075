package config_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/config"
)

const destSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestDestinationValidation(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       []string // "" entries: valid
	}{
		{"nats", `{type: nats, url: "nats://u:p@n.example.com:4222", subject: "orders.{tenant}.{type}", jetstream: false}`, nil},
		{"kafka", `{type: kafka, brokers: ["k1:9092"], topic: "orders.{type}", sasl: {mechanism: SCRAM-SHA-256, user: u, password: p}}`, nil},
		{"rabbitmq", `{type: rabbitmq, url: "amqps://u:p@r.example.com/vh", exchange: hooks, routing_key: "{type}"}`, nil},
		{"reserved subject", `{type: nats, url: "nats://n:4222", subject: "$JS.API.x"}`, []string{"endpoints[0].destination.subject: \"$JS.API.x\" is reserved"}},
		{"inbox", `{type: nats, url: "nats://n:4222", subject: "_INBOX.x"}`, []string{"destination.subject"}},
		{"no url", `{type: nats, subject: "x"}`, []string{"endpoints[0].destination.url: required"}},
		{"kafka without brokers", `{type: kafka, topic: t}`, []string{"endpoints[0].destination.brokers: at least one"}},
		{"bad topic", `{type: kafka, brokers: ["k:1"], topic: "a b"}`, []string{"endpoints[0].destination.topic"}},
		{"bad mechanism", `{type: kafka, brokers: ["k:1"], topic: t, sasl: {mechanism: GSSAPI, user: u}}`, []string{"endpoints[0].destination.sasl.mechanism"}},
		{"amqp url masked", `{type: rabbitmq, url: "http://u:hidden-pw@r/"}`, []string{"endpoints[0].destination.url: http://***@r/"}},
		{"unknown type", `{type: sqs}`, []string{"endpoints[0].destination.type: \"sqs\": want webhook, nats, kafka, rabbitmq"}},
		{"unknown key", `{type: nats, url: "nats://n:4222", subjct: x}`, []string{"endpoints[0].destination.subjct"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			y := "endpoints:\n  - id: e\n    secrets: [" + destSecret + "]\n    destination: " + tt.yaml + "\n"
			cfg, err := config.Parse([]byte(y), func(string) string { return "" })
			if err == nil && cfg != nil {
				err = cfg.Validate()
			}
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("valid destination refused: %v", err)
				}
				if cfg.Endpoints[0].URL != "" || cfg.Endpoints[0].Destination.IsWebhook() {
					t.Fatalf("endpoint %+v", cfg.Endpoints[0])
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hidden-pw") {
				t.Errorf("error shows a password: %v", err)
			}
		})
	}
}

func TestDestinationWebhookNeedsURL(t *testing.T) {
	y := "endpoints:\n  - id: e\n    secrets: [" + destSecret + "]\n"
	cfg, err := config.Parse([]byte(y), func(string) string { return "" })
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "endpoints[0].url") {
		t.Fatalf("a webhook without url: %v", err)
	}
}

func TestDestinationOptionsAndMask(t *testing.T) {
	d := config.Destination{Type: config.DestinationKafka, Brokers: []string{"k:9092"}, Topic: "t", SASL: config.SASL{Mechanism: "PLAIN", User: "u", Password: config.NewSecret("pw")}}
	var m map[string]any
	if err := json.Unmarshal(d.Options(), &m); err != nil {
		t.Fatal(err)
	}
	if m["type"] != "kafka" || m["topic"] != "t" || m["sasl"].(map[string]any)["password"] != "pw" {
		t.Errorf("options %v", m)
	}
	if (&config.Destination{}).Options() != nil {
		t.Error("a webhook has options")
	}
	if got := config.MaskURL("nats://a:b@n1:4222,nats://n2:4222"); got != "nats://***@n1:4222,nats://n2:4222" {
		t.Error(got)
	}
	if b, _ := json.Marshal(d); strings.Contains(string(b), "pw") {
		t.Errorf("JSON shows the password: %s", b)
	}
}

func TestDestinationPatch(t *testing.T) {
	p, err := config.DecodeEndpointPatch([]byte(`{"id":"e","secrets":["` + destSecret + `"],"destination":{"type":"rabbitmq","url":"amqp://u:pw@r/","exchange":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	spec := p.Apply(config.EndpointSpec{})
	ep, err := config.ResolveEndpoint(config.Default().Defaults, spec)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Destination.Type != "rabbitmq" || ep.Destination.URL.Reveal() != "amqp://u:pw@r/" || ep.Destination.Exchange != "x" {
		t.Errorf("%+v", ep.Destination)
	}
	if _, err := config.DecodeEndpointPatch([]byte(`{"destination":{"type":"nats","colour":"red"}}`)); err == nil || !strings.Contains(err.Error(), `destination: unknown field "colour"`) {
		t.Errorf("unknown field: %v", err)
	}
	p, _ = config.DecodeEndpointPatch([]byte(`{"destination":null}`))
	if spec := p.Apply(spec); !spec.Destination.IsWebhook() {
		t.Errorf("null: %+v", spec.Destination)
	}
}

func TestTenantDestinations(t *testing.T) {
	y := func(portal string) string {
		return portal + "endpoints:\n  - id: e\n    tenant: acme\n    secrets: [" + destSecret + "]\n    destination: {type: kafka, brokers: [\"k:9092\"], topic: t}\n"
	}
	cfg, err := config.Parse([]byte(y("")), func(string) string { return "" })
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), `endpoints[0].destination.type: "kafka": endpoints of a tenant may use webhook (portal.destinations)`) {
		t.Fatalf("default: %v", err)
	}
	cfg, err = config.Parse([]byte(y("portal:\n  destinations: [webhook, kafka]\n")), func(string) string { return "" })
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("listed: %v", err)
	}
	cfg, err = config.Parse([]byte(y("portal:\n  destinations: [sqs]\n")), func(string) string { return "" })
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "portal.destinations[0]") {
		t.Fatalf("unknown type: %v", err)
	}
}
