package lane

import "container/heap"

// floorGate holds a key's first entry back until the fan-out consumer's ack
// floor has reached the event just below it, so that every earlier event
// of the key has had its entry stored (and read) by then. It is state only,
// kept under its Owner's lock, and says which keys it lets go; the Owner
// considers them. Its own type so that the barrier's rules (a floor read
// before the lane's last sequence waits for the feed to read that far)
// can be read, and tested, without NATS.
type floorGate struct {
	// read is the last stream sequence the feed handed over, or confirmed
	// caught up to.
	read uint64
	// floor is the fan-out consumer's ack floor last applied; waits the
	// keys whose first entry waits for it to rise, with that entry's
	// order, and queue the same by order.
	floor uint64
	waits map[laneKeyID]uint64
	queue floorQueue
	// pendFloor is an ack floor read before the lane's last sequence was
	// pendLast: it applies once the feed has read that far, because an
	// entry of an event below the floor was stored before the floor was
	// read, but the feed may not have handed it over yet.
	pendFloor, pendLast uint64
	// wake tells the floor poller that a key started waiting.
	wake chan struct{}
}

func newFloorGate() floorGate {
	return floorGate{waits: map[laneKeyID]uint64{}, wake: make(chan struct{}, 1)}
}

// begin starts a term: nothing read, no floor yet.
func (g *floorGate) begin() {
	g.read, g.floor, g.pendFloor, g.pendLast = 0, 0, 0, 0
}

// clear forgets the keys waiting: the term ended.
func (g *floorGate) clear() {
	g.waits, g.queue = map[laneKeyID]uint64{}, nil
}

// blocks reports whether an event entry of order must wait for the floor:
// an earlier event of its key may still be on its way to the lane.
func (g *floorGate) blocks(order uint64) bool { return order > g.floor+1 }

// waiting reports whether some key waits for the floor.
func (g *floorGate) waiting() bool { return len(g.waits) > 0 }

// stop: key id no longer waits.
func (g *floorGate) stop(id laneKeyID) { delete(g.waits, id) }

// floorWaiter is a key waiting for the ack floor to reach order - 1 (the
// stream sequence of the event of its first entry).
type floorWaiter struct {
	order uint64
	id    laneKeyID
}

// floorQueue holds the waiters by order, lowest first, so that a rise of
// the floor visits only the keys it lets go: with 100,000 keys waiting, a
// poll every laneFloorPoll must not walk them all. A key that stops
// waiting leaves its waiter in the queue; floorGate.waits says which are
// current, and the floor passes the stale ones in time.
type floorQueue []floorWaiter

func (q floorQueue) Len() int           { return len(q) }
func (q floorQueue) Less(i, j int) bool { return q[i].order < q[j].order }
func (q floorQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *floorQueue) Push(x any)        { *q = append(*q, x.(floorWaiter)) }
func (q *floorQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	*q = old[:len(old)-1]
	return w
}

// wait files key id as waiting for the floor to reach order - 1, waking the
// poller when it is the first to wait.
func (g *floorGate) wait(id laneKeyID, order uint64) {
	if cur, ok := g.waits[id]; ok && cur == order {
		return
	}
	g.waits[id] = order
	heap.Push(&g.queue, floorWaiter{order: order, id: id})
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// apply raises the floor and returns the keys that waited for it.
func (g *floorGate) apply(floor uint64) []laneKeyID {
	if floor <= g.floor {
		return nil
	}
	g.floor = floor
	var gone []laneKeyID
	for len(g.queue) > 0 && g.queue[0].order <= floor+1 {
		w := heap.Pop(&g.queue).(floorWaiter)
		if order, ok := g.waits[w.id]; !ok || order != w.order {
			continue // it stopped waiting, or waits for another entry now
		}
		delete(g.waits, w.id)
		gone = append(gone, w.id)
	}
	if len(g.waits) == 0 {
		g.queue = nil // the stale waiters with it
	}
	return gone
}

// readTo notes that the feed has read every entry up to seq, and applies
// an ack floor that waited for it; it returns the keys that let go.
func (g *floorGate) readTo(seq uint64) []laneKeyID {
	g.read = max(g.read, seq)
	if g.pendLast != 0 && g.read >= g.pendLast {
		floor := g.pendFloor
		g.pendFloor, g.pendLast = 0, 0
		return g.apply(floor)
	}
	return nil
}

// offer applies the fan-out's ack floor, read before the lane's last
// sequence was last, once the feed has read up to last (now, or readTo
// later); it returns the keys it lets go now.
func (g *floorGate) offer(floor, last uint64) []laneKeyID {
	if floor <= g.floor {
		return nil
	}
	if g.read >= last {
		return g.apply(floor)
	}
	g.pendFloor, g.pendLast = floor, last
	return nil
}

// pending is the lane's last sequence a floor waits for the feed to read
// (0: none), when the feed has not read it yet.
func (g *floorGate) pending() uint64 {
	if g.pendLast > g.read {
		return g.pendLast
	}
	return 0
}
