package config

import "testing"

func TestConsoleShowPayloadsDefaultsToTrueAndTurnsOff(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		env        map[string]string
		want       bool
	}{
		{name: "default", yaml: "data_dir: /tmp/x\n", want: true},
		{name: "file", yaml: "console: {show_payloads: false}\n", want: false},
		{name: "env", yaml: "console: {show_payloads: true}\n", env: map[string]string{"HOOKJET_CONSOLE_SHOW_PAYLOADS": "false"}, want: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml), func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Console.ShowPayloads != tt.want {
				t.Fatalf("console.show_payloads = %v, want %v", cfg.Console.ShowPayloads, tt.want)
			}
		})
	}
}
