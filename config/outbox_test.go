package config

import (
	"strings"
	"testing"
	"time"
)

func TestOutboxDefaultsAndOverrides(t *testing.T) {
	d := Default().Outbox
	if d.Table != "hookjet_outbox" || d.Batch != 500 || d.Poll != time.Second || !d.DSN.IsZero() {
		t.Fatalf("Default().Outbox = %+v", d)
	}
	c := mustParse(t, "outbox:\n  dsn: env:PGURL\n  table: app.events_out\n  batch: 20\n  poll: 250ms\n",
		map[string]string{"PGURL": "postgres://u:hunter2@db/app", "HOOKJET_OUTBOX_BATCH": "30"})
	o := c.Outbox
	if o.DSN.Reveal() != "postgres://u:hunter2@db/app" || o.Table != "app.events_out" || o.Batch != 30 || o.Poll != 250*time.Millisecond {
		t.Fatalf("Outbox = %+v (dsn %q)", o, o.DSN.Reveal())
	}
}

func TestOutboxInvalid(t *testing.T) {
	tests := []struct{ name, data, key, substr string }{
		{"empty table", "outbox: {table: ''}\n", "outbox.table", "must not be empty"},
		{"quote in table", "outbox: {table: 'x\"; drop table y; --'}\n", "outbox.table", "use only a-z"},
		{"upper case", "outbox: {table: Outbox}\n", "outbox.table", "use only a-z"},
		{"digit first", "outbox: {table: 1outbox}\n", "outbox.table", "starts with a digit"},
		{"two dots", "outbox: {table: a.b.c}\n", "outbox.table", "at most one schema"},
		{"too long", "outbox: {table: " + strings.Repeat("a", 49) + "}\n", "outbox.table", "longer than 48"},
		{"qualified too long", "outbox: {table: " + strings.Repeat("s", 30) + "." + strings.Repeat("t", 40) + "}\n", "outbox.table", "at most 63 bytes with its schema"},
		{"batch zero", "outbox: {batch: 0}\n", "outbox.batch", "between 1 and 10000"},
		{"batch too big", "outbox: {batch: 10001}\n", "outbox.batch", "between 1 and 10000"},
		{"poll zero", "outbox: {poll: 0s}\n", "outbox.poll", "must be positive"},
		{"reserved endpoint", "endpoints:\n  - id: _outbox\n    url: https://x.example.com/\n    secrets: [" + secretA + "]\n", "endpoints[0].id", "reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			findKeyErr(t, parseErr(t, tt.data, nil), tt.key, tt.substr)
		})
	}
}

func TestOutboxDSNNeverPrinted(t *testing.T) {
	err := parseErr(t, "outbox:\n  dsn: postgres://u:hunter2@db/app\n  batch: 0\n", nil)
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error shows the DSN: %v", err)
	}
}

func TestValidateEventType(t *testing.T) {
	for _, ok := range []string{"order.created", "a", "a-b_c.D9", "ünïcode.x", strings.Repeat("a", MaxEventTypeLen)} {
		if err := ValidateEventType(ok); err != nil {
			t.Errorf("ValidateEventType(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "a..b", ".a", "a.", "a b", "a\nb", "order.*", ">", "a.>", "a*b", "a.*.c", strings.Repeat("a", MaxEventTypeLen+1)} {
		if err := ValidateEventType(bad); err == nil {
			t.Errorf("ValidateEventType(%q) = nil, want an error", bad)
		}
	}
}
