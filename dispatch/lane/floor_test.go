package lane

import (
	"fmt"
	"testing"
)

// The ack floor's barrier, alone: a key's first event entry waits until the
// floor reaches the event just below it, and a floor read before the lane's
// last sequence waits until the feed has read that far.
func TestFloorGate(t *testing.T) {
	a, b, c := laneKeyID{"ep", "a"}, laneKeyID{"ep", "b"}, laneKeyID{"ep", "c"}
	tests := []struct {
		name string
		run  func(g *floorGate) []laneKeyID
		want string
	}{
		{"a floor at the event below lets it go", func(g *floorGate) []laneKeyID {
			g.wait(a, 11)
			return g.apply(10)
		}, "[{ep a}]"},
		{"a floor below it does not", func(g *floorGate) []laneKeyID {
			g.wait(a, 11)
			return g.apply(9)
		}, "[]"},
		{"a rise lets go only the keys at or below it, lowest first", func(g *floorGate) []laneKeyID {
			g.wait(c, 30)
			g.wait(b, 20)
			g.wait(a, 12)
			return g.apply(19)
		}, "[{ep a} {ep b}]"},
		{"a key that stopped waiting is passed", func(g *floorGate) []laneKeyID {
			g.wait(a, 11)
			g.stop(a)
			return g.apply(20)
		}, "[]"},
		{"a key that waits for another entry now goes at that one", func(g *floorGate) []laneKeyID {
			g.wait(a, 11)
			g.wait(a, 15)
			return append(g.apply(12), g.apply(14)...)
		}, "[{ep a}]"},
		{"a floor offered before the feed read the lane's last sequence waits", func(g *floorGate) []laneKeyID {
			g.wait(a, 11)
			g.readTo(100)
			return g.offer(10, 101)
		}, "[]"},
		{"and applies once the feed reads that far", func(g *floorGate) []laneKeyID {
			g.wait(a, 11)
			g.readTo(100)
			g.offer(10, 101)
			return g.readTo(101)
		}, "[{ep a}]"},
		{"a floor offered after the feed read that far applies at once", func(g *floorGate) []laneKeyID {
			g.wait(a, 11)
			g.readTo(101)
			return g.offer(10, 101)
		}, "[{ep a}]"},
		{"a floor no higher than the last is nothing", func(g *floorGate) []laneKeyID {
			g.apply(10)
			g.wait(a, 11)
			g.stop(a)
			g.wait(a, 11)
			return g.offer(10, 0)
		}, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newFloorGate()
			got := tt.run(&g)
			if got == nil {
				got = []laneKeyID{}
			}
			if fmt.Sprint(got) != tt.want {
				t.Errorf("let go %v, want %s", got, tt.want)
			}
		})
	}
}

func TestFloorGatePending(t *testing.T) {
	g := newFloorGate()
	if g.pending() != 0 {
		t.Fatal("a new gate has a floor pending")
	}
	g.readTo(5)
	g.offer(3, 8)
	if got := g.pending(); got != 8 {
		t.Errorf("pending %d, want 8 (the feed read 5)", got)
	}
	g.readTo(8)
	if got := g.pending(); got != 0 || g.floor != 3 {
		t.Errorf("pending %d, floor %d after the feed read 8, want 0 and 3", got, g.floor)
	}
}
