package destination

import "testing"

func TestClassString(t *testing.T) {
	for _, tt := range []struct {
		c    Class
		want string
	}{
		{Success, "success"},
		{Transient, "transient"},
		{RateLimited, "rate_limited"},
		{Permanent, "permanent"},
		{Gone, "gone"},
		{Rejected, "rejected"},
		{Auth, "auth"},
		{Auth + 1, "Class(7)"},
		{-1, "Class(-1)"},
	} {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("Class(%d).String() = %q, want %q", int(tt.c), got, tt.want)
		}
	}
}
