package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
)

// Broker destinations through the admin API: created with credentials,
// shown with the URL's user info masked and no password, refused with the
// dotted field named; every call validated against api/openapi.json.
func TestAPIEndpointDestinations(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "file", URL: r.URL}), cli.Options{})
	for _, tc := range []struct {
		body  string
		code  int
		field string
	}{
		{`{"id":"rb","destination":{"type":"rabbitmq","url":"amqp://hook:rabbit-pw-1@rabbit.example.com:5672/vh","exchange":"hooks","routing_key":"orders.{type}"}}`, 201, ""},
		{`{"id":"kf","destination":{"type":"kafka","brokers":["k1.example.com:9092"],"topic":"orders.{tenant}","sasl":{"mechanism":"SCRAM-SHA-512","user":"hook","password":"kafka-pw-2"}}}`, 201, ""},
		{`{"id":"n1","destination":{"type":"nats","url":"nats://n.example.com:4222","subject":"hookjet.events.x"}}`, 400, "destination.subject"},
		{`{"id":"n2","destination":{"type":"kafka","topic":"t"}}`, 400, "destination.brokers"},
		{`{"id":"n3","destination":{"type":"sqs"}}`, 400, "destination.type"},
		{`{"id":"n4","destination":{"type":"nats","colour":"red"}}`, 400, "destination"},
		{`{"id":"n5"}`, 400, "url"},
		{`{"id":"n7","tenant":"acme","destination":{"type":"kafka","brokers":["k1.example.com:9092"],"topic":"t"}}`, 400, "destination.type"},
		{`{"id":"n6","url":"https://x.example.com/","destination":{"type":"rabbitmq","url":"amqp://h/"}}`, 400, "url"},
	} {
		code, raw, out := h.rawCall("POST", "/api/v1/endpoints", tc.body)
		if code != tc.code || (tc.field != "" && out["field"] != tc.field) {
			t.Errorf("POST %s: HTTP %d %v, want %d field %q", tc.body, code, out, tc.code, tc.field)
		}
		if strings.Contains(raw, "rabbit-pw-1") || strings.Contains(raw, "kafka-pw-2") {
			t.Errorf("answer shows a credential: %s", raw)
		}
	}
	checkFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		code, raw, _ := h.rawCall("GET", "/api/v1/endpoints/rb", "")
		if code != 200 {
			return fmt.Errorf("HTTP %d", code)
		}
		if !strings.Contains(raw, `"url":"amqp://***@rabbit.example.com:5672/vh"`) || !strings.Contains(raw, `"type":"rabbitmq"`) || strings.Contains(raw, "rabbit-pw-1") || strings.Contains(raw, "hook:") {
			return fmt.Errorf("rb: %s", raw)
		}
		return nil
	})
	code, raw, _ := h.rawCall("GET", "/api/v1/endpoints/kf", "")
	if code != 200 || strings.Contains(raw, "kafka-pw-2") || !strings.Contains(raw, `"sasl_mechanism":"SCRAM-SHA-512"`) {
		t.Errorf("kf: HTTP %d %s", code, raw)
	}
	// back to a webhook: null
	if code, raw, _ := h.rawCall("PATCH", "/api/v1/endpoints/rb", `{"destination":null,"url":"https://rb.example.com/hooks"}`); code != 200 || !strings.Contains(raw, `"destination":{"type":"webhook"}`) {
		t.Errorf("PATCH to a webhook: HTTP %d %s", code, raw)
	}
}

// rawCall is call returning the answer's text too, compacted.
func (h *hookjet) rawCall(method, path, body string) (int, string, apiAnswer) {
	h.t.Helper()
	req, err := http.NewRequest(method, "http://"+h.srv.AdminAddr()+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out apiAnswer
	_ = json.Unmarshal(raw, &out)
	var compact bytes.Buffer
	if json.Compact(&compact, raw) == nil {
		raw = compact.Bytes()
	}
	return resp.StatusCode, string(raw), out
}
