package config

import (
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// passes Validate again.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		fullYAML,
		endpointYAML,
		"data_dir: x\n",
		"streams: {replicas: 3, duplicate_window: 1m, max_age: 1h}\n",
		"defaults:\n  retry: {max_attempts: 4}\n" + endpointYAML + "    retry: {base: 1s}\n",
		endpointYAML + "    events: [order.*, order.created, '>']\n",
		endpointYAML + "    headers: {X-Key: v}\n",
		"endpoints:\n  - &a {id: a, url: 'https://a.example.com/', secrets: [" + secretA + "]}\n  - <<: *a\n    id: b\n",
		"a: &x [*x]\n",
		"endpoints: &x [*x]\n",
		"nats: {token: env:T}\n",
		"security: {allow_cidrs: [10.0.0.0/8]}\n",
		"worker: {concurrency: 0x10}\n",
	} {
		f.Add([]byte(seed))
	}
	env := envOf(map[string]string{"T": "token", "WH": secretA})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parse(data, env, noFiles)
		if err != nil {
			if c != nil {
				t.Fatalf("Parse returned a config with error %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that Validate rejects: %v\ninput:\n%s", err, data)
		}
		for _, e := range c.Endpoints {
			for _, s := range e.Secrets {
				if _, err := DecodeSecret(s.Reveal()); err != nil {
					t.Fatalf("accepted an invalid secret: %v", err)
				}
			}
		}
	})
}
