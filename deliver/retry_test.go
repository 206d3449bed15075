package deliver

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		v      string
		want   time.Duration
		wantOK bool
	}{
		{"seconds", "120", 2 * time.Minute, true},
		{"zero", "0", 0, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"surrounding space", "  5 ", 5 * time.Second, true},
		{"largest exact", "9223372036", 9223372036 * time.Second, true},
		{"saturates", "9223372037", maxDuration, true},
		{"huge", "99999999999999999999999999999999", maxDuration, true},
		{"IMF-fixdate", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"RFC 850", "Wednesday, 04-Mar-26 12:01:00 GMT", time.Minute, true},
		{"asctime", "Wed Mar  4 12:00:30 2026", 30 * time.Second, true},
		{"date in the past", "Fri, 31 Dec 1999 23:59:59 GMT", 0, true},
		{"date far in the future", "Fri, 31 Dec 9999 23:59:59 GMT", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Sub(now), true},
		{"empty", "", 0, false},
		{"blank", "   ", 0, false},
		{"negative", "-5", 0, false},
		{"plus sign", "+5", 0, false},
		{"fraction", "1.5", 0, false},
		{"trailing junk", "10s", 0, false},
		{"hex", "0x10", 0, false},
		{"words", "tomorrow", 0, false},
		{"ISO date", "2026-03-04T12:00:00Z", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tt.v, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "-1", "99999999999999999999", "Fri, 31 Dec 1999 23:59:59 GMT",
		"Fri, 31 Dec 9999 23:59:59 GMT", "Wed Mar  4 12:00:30 2026", "", " 5 ", "1e9"} {
		f.Add(s, int64(1_700_000_000))
	}
	f.Fuzz(func(t *testing.T, v string, unix int64) {
		d, ok := ParseRetryAfter(v, time.Unix(unix, 0))
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, negative", v, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, false; want 0 when invalid", v, d)
		}
	})
}
