package lane

import (
	"strings"
	"testing"
)

// The bounds' arithmetic, alone: an endpoint that counts every entry is
// bounded by all of them; one that delivered lately only by its failing
// keys' entries, and only for a failing key.
func TestTallyBounds(t *testing.T) {
	busy := func(cause string) bool { return cause == "in_flight" }
	entry := func(size int64) *laneEntry { return &laneEntry{size: size} }
	proven := func(string) bool { return true }
	unproven := func(string) bool { return false }
	tests := []struct {
		name     string
		fill     func(tl *tally)
		limit    int
		keyFails bool
		proven   func(string) bool
		want     string // a part of the reason; "": within
	}{
		{"within max_backlog", func(tl *tally) {
			for range 4 {
				tl.add("ep", "", entry(10), 1)
			}
		}, 5, false, unproven, ""},
		{"past max_backlog", func(tl *tally) {
			for range 5 {
				tl.add("ep", "", entry(10), 1)
			}
		}, 5, false, unproven, "max_backlog (5 waiting deliveries)"},
		{"a proven endpoint's burst passes", func(tl *tally) {
			for range 50 {
				tl.add("ep", "", entry(10), 1)
			}
		}, 5, false, proven, ""},
		{"a proven endpoint's failing key counts its failing entries", func(tl *tally) {
			for range 50 {
				tl.add("ep", "", entry(10), 1)
			}
			tl.fail("ep", nil, 1)
			for range 4 {
				tl.add("ep", "retrying", entry(10), 1)
			}
		}, 5, true, proven, `while ordering key "k" fails`},
		{"a busy key does not fail", func(tl *tally) {
			for range 50 {
				tl.add("ep", "in_flight", entry(10), 1)
			}
		}, 5, false, proven, ""},
		{"the lane's share in bytes", func(tl *tally) {
			tl.add("ep", "", entry(901), 1)
		}, 0, false, unproven, "reached 1/2 of HOOKJET_ORDERED (1000 bytes)"},
		{"entries ahead of the feed count", func(tl *tally) {
			for range 3 {
				tl.aheadAdd(laneAhead{ep: "ep", size: 10}, 1)
			}
			tl.add("ep", "", entry(10), 1)
		}, 4, false, unproven, "max_backlog"},
		{"a hold marker is no delivery", func(tl *tally) {
			for range 9 {
				tl.add("ep", "", &laneEntry{hold: true, front: true}, 1)
			}
		}, 1, false, unproven, ""},
		{"another endpoint's entries do not count", func(tl *tally) {
			for range 9 {
				tl.add("other", "", entry(10), 1)
			}
		}, 1, false, unproven, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTally(Options{Busy: busy, Share: 1000, Shares: 2})
			tt.fill(&tl)
			got := tl.bounds("ep", tt.limit, tt.keyFails, "k", 1, 100, tt.proven)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("bounds say %q, want %q", got, tt.want)
			}
		})
	}
}

// Counts come and go with their entries; an endpoint with none is
// forgotten, and a reservation ends when the feed reads its entry.
func TestTallyCountsComeAndGo(t *testing.T) {
	tl := newTally(Options{Busy: func(string) bool { return false }, Share: 1 << 20, Shares: 2})
	e := &laneEntry{size: 10}
	tl.add("ep", "", e, 1)
	tl.fail("ep", []*laneEntry{e}, 1)
	if c := tl.counts["ep"]; c.deliveries != 1 || c.failing.n != 1 || c.failingKeys != 1 || tl.waiting("ep") != 1 {
		t.Fatalf("counts %+v after one entry of a failing key", c)
	}
	tl.fail("ep", []*laneEntry{e}, -1)
	tl.add("ep", "", e, -1)
	if _, ok := tl.counts["ep"]; ok {
		t.Fatalf("an endpoint with nothing in the lane is still counted: %+v", tl.counts["ep"])
	}
	a := laneAhead{gen: 1, ep: "ep", size: 10}
	tl.aheadAdd(a, 1)
	tl.landed(a, 7, 5)
	if tl.ahead["ep"].n != 1 {
		t.Fatal("an entry the feed has not read no longer counts ahead")
	}
	tl.readAhead(7)
	if _, ok := tl.ahead["ep"]; ok {
		t.Fatal("an entry the feed read still counts ahead")
	}
	tl.aheadAdd(a, 1)
	tl.landed(a, 4, 5) // the feed read it before it landed
	if _, ok := tl.ahead["ep"]; ok {
		t.Fatal("an entry read before it landed still counts ahead")
	}
}
