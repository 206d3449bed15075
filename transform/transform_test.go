package transform_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookjet/hookjet/transform"
)

func input() transform.Input {
	return transform.Input{
		Type:        "order.created",
		ID:          "evt_1",
		Tenant:      "acme",
		Key:         "order-7",
		Payload:     []byte(`{"id":"o7","amount":1500,"lines":[{"sku":"a"}]}`),
		ContentType: "application/json",
		URL:         "https://hooks.example.com/in",
	}
}

func compile(t *testing.T, src string) *transform.Script {
	t.Helper()
	s, err := transform.Compile(src)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return s
}

func engine(t *testing.T) *transform.Engine {
	t.Helper()
	e := transform.New(transform.Options{})
	t.Cleanup(e.Close)
	return e
}

func TestRunReshapes(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		check  func(t *testing.T, out transform.Output)
		change func(in *transform.Input)
	}{
		{
			name: "payload as JSON, keys in order",
			src: `function handler(webhook) {
  webhook.payload = {text: "order " + webhook.payload.id + " for " + webhook.payload.amount, type: webhook.eventType, tenant: webhook.event.tenant, key: webhook.event.key, id: webhook.event.id};
  return webhook;
}`,
			check: func(t *testing.T, out transform.Output) {
				want := `{"text":"order o7 for 1500","type":"order.created","tenant":"acme","key":"order-7","id":"evt_1"}`
				if string(out.Payload) != want || out.ContentType != "application/json" {
					t.Fatalf("payload %s (%s), want %s", out.Payload, out.ContentType, want)
				}
			},
		},
		{
			name: "unchanged",
			src:  `function handler(w) { return w }`,
			check: func(t *testing.T, out transform.Output) {
				if string(out.Payload) != `{"id":"o7","amount":1500,"lines":[{"sku":"a"}]}` || out.URL != "https://hooks.example.com/in" || out.Headers != nil || out.Cancel {
					t.Fatalf("out = %+v", out)
				}
			},
		},
		{
			name: "string payload keeps the publisher's type",
			src:  `function handler(w) { w.payload = "id=" + w.payload.id; return w }`,
			change: func(in *transform.Input) {
				in.ContentType = "application/x-www-form-urlencoded; charset=utf-8"
			},
			check: func(t *testing.T, out transform.Output) {
				if string(out.Payload) != "id=o7" || out.ContentType != "application/x-www-form-urlencoded; charset=utf-8" {
					t.Fatalf("out = %q %q", out.Payload, out.ContentType)
				}
			},
		},
		{
			name: "a payload that is not JSON is a string",
			src:  `function handler(w) { w.payload = w.payload.toUpperCase(); return w }`,
			change: func(in *transform.Input) {
				in.Payload, in.ContentType = []byte("plain text"), "text/plain"
			},
			check: func(t *testing.T, out transform.Output) {
				if string(out.Payload) != "PLAIN TEXT" || out.ContentType != "text/plain" {
					t.Fatalf("out = %q %q", out.Payload, out.ContentType)
				}
			},
		},
		{
			name: "url and headers",
			src: `function handler(w) {
  w.url = "https://other.example.com/x?t=" + w.event.tenant;
  w.headers["X-Tenant"] = w.event.tenant;
  w.headers["Content-Type"] = "application/vnd.acme+json";
  return w;
}`,
			check: func(t *testing.T, out transform.Output) {
				if out.URL != "https://other.example.com/x?t=acme" {
					t.Fatalf("url %q", out.URL)
				}
				if out.Headers["X-Tenant"] != "acme" || out.Headers["Content-Type"] != "application/vnd.acme+json" || len(out.Headers) != 2 {
					t.Fatalf("headers %v", out.Headers)
				}
			},
		},
		{
			name: "cancel",
			src:  `function handler(w) { w.cancel = w.payload.amount < 2000; return w }`,
			check: func(t *testing.T, out transform.Output) {
				if !out.Cancel {
					t.Fatalf("out = %+v, want cancel", out)
				}
			},
		},
		{
			name: "a regular expression",
			src:  `function handler(w) { w.payload.ok = /^o(\d+)$/.test(w.payload.id); return w }`,
			check: func(t *testing.T, out transform.Output) {
				if !strings.Contains(string(out.Payload), `"ok":true`) {
					t.Fatalf("payload %s", out.Payload)
				}
			},
		},
	}
	e := engine(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input()
			if tt.change != nil {
				tt.change(&in)
			}
			out, err := e.Run(t.Context(), "ep", compile(t, tt.src), in, transform.Limits{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			tt.check(t, out)
		})
	}
}

func TestRunFails(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		in        func(*transform.Input)
		sentinel  error
		line, col int
		msg       string
	}{
		{"throw", "function handler(w) {\n  const x = 1;\n  throw new Error(\"no way\");\n}", nil, transform.ErrThrown, 3, 9, "Error: no way"},
		{"type error", "function handler(w) {\n  return w.payload.missing.deep;\n}", nil, transform.ErrThrown, 2, 28, "TypeError"},
		{"endless loop", "function handler(w) {\n  let i = 0;\n  for (;;) { i++ }\n}", nil, transform.ErrTimeout, 3, 14, "interrupted after 50ms"},
		{"deep recursion", "function f(n) { return f(n + 1) + 1 }\nfunction handler(w) { return f(0) }", nil, transform.ErrThrown, 0, 0, "call stack"},
		{"memory", "function handler(w) {\n  const a = [];\n  for (;;) { a.push('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' + a.length) }\n}", nil, transform.ErrMemory, 3, 0, "heap grew by more than 8388608 bytes"},
		{"returns nothing", "\n\nfunction handler(w) {\n  w.payload = 1;\n}", nil, transform.ErrBadReturn, 3, 1, "handler returned undefined"},
		{"returns a string", "function handler(w) { return 'x' }", nil, transform.ErrBadReturn, 1, 1, "not the webhook object"},
		{"protected header", "function handler(w) { w.headers['Webhook-Signature'] = 'v1,x'; return w }", nil, transform.ErrBadReturn, 1, 1, `header "Webhook-Signature" cannot be set`},
		{"authorization", "function handler(w) { w.headers.authorization = 'Bearer x'; return w }", nil, transform.ErrBadReturn, 1, 1, "cannot be set"},
		{"hookjet header", "function handler(w) { w.headers['Hookjet-Tenant'] = 'other'; return w }", nil, transform.ErrBadReturn, 1, 1, "cannot be set"},
		{"header value", "function handler(w) { w.headers['X-A'] = 'a\\r\\nB: c'; return w }", nil, transform.ErrBadReturn, 1, 1, "control character"},
		{"header not a string", "function handler(w) { w.headers['X-A'] = 1; return w }", nil, transform.ErrBadReturn, 1, 1, "not a string"},
		{"url scheme", "function handler(w) { w.url = 'file:///etc/passwd'; return w }", nil, transform.ErrBadReturn, 1, 1, "http or https"},
		{"url user", "function handler(w) { w.url = 'https://u:p@x.example/'; return w }", nil, transform.ErrBadReturn, 1, 1, "user information"},
		{"url without destination", "function handler(w) { w.url = 'https://x.example/'; return w }", func(in *transform.Input) { in.URL = "" }, transform.ErrBadReturn, 1, 1, "has none"},
		{"payload undefined", "function handler(w) { delete w.payload; return w }", nil, transform.ErrBadReturn, 1, 1, "payload is undefined"},
		{"payload a function", "function handler(w) { w.payload = function() {}; return w }", nil, transform.ErrBadReturn, 1, 1, "cannot be written as JSON"},
		{"cancel not bool", "function handler(w) { w.cancel = 'yes'; return w }", nil, transform.ErrBadReturn, 1, 1, "not a boolean"},
		{"output too large", "function handler(w) { w.payload = 'x'.repeat(2000000); return w }", nil, transform.ErrBadReturn, 1, 1, "more than 1048576"},
		{"no require", "function handler(w) { require('fs'); return w }", nil, transform.ErrThrown, 1, 30, "ReferenceError: require is not defined"},
		{"no timers", "function handler(w) { setTimeout(function() {}, 1); return w }", nil, transform.ErrThrown, 1, 33, "ReferenceError: setTimeout is not defined"},
		{"no fetch", "function handler(w) { fetch('https://x.example'); return w }", nil, transform.ErrThrown, 1, 28, "ReferenceError: fetch is not defined"},
	}
	e := engine(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input()
			if tt.in != nil {
				tt.in(&in)
			}
			start := time.Now()
			lim := transform.Limits{Timeout: 5 * time.Second}
			switch {
			case errors.Is(tt.sentinel, transform.ErrTimeout):
				lim = transform.Limits{}
			case errors.Is(tt.sentinel, transform.ErrMemory):
				lim = transform.Limits{Timeout: 10 * time.Second, MaxMemory: 8 << 20}
			}
			_, err := e.Run(t.Context(), "ep-"+tt.name, compile(t, tt.src), in, lim)
			if !errors.Is(err, tt.sentinel) {
				t.Fatalf("err = %v, want %v", err, tt.sentinel)
			}
			var te *transform.Error
			if !errors.As(err, &te) {
				t.Fatalf("err %T is not a *transform.Error", err)
			}
			if tt.line != 0 && (te.Line != tt.line || (tt.col != 0 && te.Column != tt.col)) {
				t.Errorf("at %d:%d, want %d:%d (%v)", te.Line, te.Column, tt.line, tt.col, err)
			}
			if !strings.Contains(te.Message, tt.msg) {
				t.Errorf("message %q lacks %q", te.Message, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), "transform: ") {
				t.Errorf("%q does not name transform", err)
			}
			if time.Since(start) > 8*time.Second {
				t.Errorf("the loop ran for %s", time.Since(start))
			}
			if e.Idle("ep-"+tt.name) != 0 {
				t.Error("the runtime of a failed run was kept")
			}
		})
	}
}

func TestCompileRefuses(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
		msg       string
	}{
		{"syntax", "function handler(w) {\n  return w +;\n}", 2, 13, "SyntaxError"},
		{"no handler", "function handle(w) { return w }", 1, 1, "defines no function handler"},
		{"handler not a function", "var handler = 3;", 1, 1, "defines no function handler"},
		{"top level throws", "throw new Error('boom')\nfunction handler(w) { return w }", 1, 7, "boom"},
		{"top level loops", "while (true) {}\nfunction handler(w) { return w }", 1, 0, "interrupted"},
		{"empty", " \n", 0, 0, "is empty"},
		{"too large", "function handler(w) { return w }\n//" + strings.Repeat("x", 64<<10), 0, 0, "more than 65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := transform.Compile(tt.src)
			if !errors.Is(err, transform.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			var te *transform.Error
			if !errors.As(err, &te) {
				t.Fatalf("%T", err)
			}
			if te.Line != tt.line || (tt.col != 0 && te.Column != tt.col) {
				t.Errorf("at %d:%d, want %d:%d (%v)", te.Line, te.Column, tt.line, tt.col, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("%q lacks %q", err, tt.msg)
			}
		})
	}
}

// A sourceMappingURL comment would make goja read a file: the sandbox never
// loads source maps, in the script or in what it evaluates.
func TestNoSourceMapFiles(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "map.json")
	if err := os.WriteFile(bad, []byte("not a source map"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := "function handler(w) {\n  w.payload = eval('1 + 1\\n//# sourceMappingURL=" + bad + "');\n  return w;\n}\n//# sourceMappingURL=" + bad + "\n"
	s := compile(t, src)
	out, err := engine(t).Run(t.Context(), "ep", s, input(), transform.Limits{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if string(out.Payload) != "2" {
		t.Fatalf("payload %s", out.Payload)
	}
}

func TestRegexpTimeout(t *testing.T) {
	// A backreference sends the pattern to regexp2; its catastrophic
	// backtracking stops at RegexpTimeout and the match fails.
	src := `function handler(w) { w.payload = {m: /^(a+)+\1b$/.test("a".repeat(40))}; return w }`
	start := time.Now()
	out, err := engine(t).Run(t.Context(), "ep", compile(t, src), input(), transform.Limits{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if string(out.Payload) != `{"m":false}` {
		t.Fatalf("payload %s", out.Payload)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the match ran %s", d)
	}
}

func TestPoolPerEndpointAndVersion(t *testing.T) {
	e := engine(t)
	// A script that counts its runs in a global: a runtime is reused by
	// its endpoint only.
	v1 := compile(t, `var n = 0; function handler(w) { n++; w.payload = {n: n, v: 1}; return w }`)
	run := func(ep string, s *transform.Script) string {
		out, err := e.Run(t.Context(), ep, s, input(), transform.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return string(out.Payload)
	}
	if got := run("a", v1); got != `{"n":1,"v":1}` {
		t.Fatal(got)
	}
	if got := run("a", v1); got != `{"n":2,"v":1}` {
		t.Fatalf("the runtime was not reused: %s", got)
	}
	if got := run("b", v1); got != `{"n":1,"v":1}` {
		t.Fatalf("endpoint b ran in a's runtime: %s", got)
	}
	v2 := compile(t, `var n = 0; function handler(w) { n++; w.payload = {n: n, v: 2}; return w }`)
	if got := run("a", v2); got != `{"n":1,"v":2}` {
		t.Fatalf("version 2 ran in version 1's runtime: %s", got)
	}
	if e.Idle("a") != 1 {
		t.Fatalf("a keeps %d idle runtimes, want 1 (version 1's dropped)", e.Idle("a"))
	}
	e.Forget("a")
	if e.Idle("a") != 0 {
		t.Fatal("Forget kept runtimes")
	}
}

// An endless loop is interrupted in time while other runs go on.
func TestLoopDoesNotStopOthers(t *testing.T) {
	e := transform.New(transform.Options{Concurrency: 4})
	t.Cleanup(e.Close)
	loop := compile(t, `function handler(w) { for (;;) {} }`)
	ok := compile(t, `function handler(w) { w.payload = {ok: true}; return w }`)
	var wg sync.WaitGroup
	wg.Add(1)
	var loopErr error
	var loopTook time.Duration
	go func() {
		defer wg.Done()
		start := time.Now()
		_, loopErr = e.Run(context.Background(), "loop", loop, input(), transform.Limits{Timeout: 300 * time.Millisecond})
		loopTook = time.Since(start)
	}()
	for range 50 {
		if _, err := e.Run(t.Context(), "ok", ok, input(), transform.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if !errors.Is(loopErr, transform.ErrTimeout) {
		t.Fatalf("loop: %v", loopErr)
	}
	if loopTook < 300*time.Millisecond || loopTook > 5*time.Second {
		t.Fatalf("the loop ran %s with a 300ms timeout", loopTook)
	}
}

func TestContextInterrupts(t *testing.T) {
	e := engine(t)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := e.Run(ctx, "ep", compile(t, `function handler(w) { for (;;) {} }`), input(), transform.Limits{Timeout: time.Minute})
	if !errors.Is(err, transform.ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
}

func TestProtected(t *testing.T) {
	for _, h := range []string{"webhook-id", "Webhook-Timestamp", "HOOKJET-ATTEMPT", "nats-msg-id", "Authorization", "host", "Content-Length"} {
		if !transform.Protected(h) {
			t.Errorf("%s is not protected", h)
		}
	}
	for _, h := range []string{"X-Api-Key", "Content-Type", "User-Agent", "webhooks"} {
		if transform.Protected(h) {
			t.Errorf("%s is protected", h)
		}
	}
}
