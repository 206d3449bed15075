package lane

import "container/heap"

// floorWaiter is a key waiting for the ack floor to reach order - 1 (the
// stream sequence of the event of its first entry).
type floorWaiter struct {
	order uint64
	id    laneKeyID
}

// floorQueue holds the waiters by order, lowest first, so that a rise of
// the floor visits only the keys it lets go: with 100,000 keys waiting, a
// poll every laneFloorPoll must not walk them all. A key that stops
// waiting leaves its waiter in the queue; lane.floorWait says which are
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

// waitFloor files k as waiting for the floor to reach order - 1, waking the
// poller when it is the first to wait. l.mu is held.
func (l *Owner) waitFloor(k *laneKey, order uint64) {
	if cur, ok := l.floorWait[k.id]; ok && cur == order {
		return
	}
	l.floorWait[k.id] = order
	heap.Push(&l.floorQueue, floorWaiter{order: order, id: k.id})
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// applyFloor raises the floor and lets the keys that waited for it go.
// l.mu is held.
func (l *Owner) applyFloor(floor uint64) {
	if floor <= l.floor {
		return
	}
	l.floor = floor
	for len(l.floorQueue) > 0 && l.floorQueue[0].order <= floor+1 {
		w := heap.Pop(&l.floorQueue).(floorWaiter)
		if order, ok := l.floorWait[w.id]; !ok || order != w.order {
			continue // it stopped waiting, or waits for another entry now
		}
		delete(l.floorWait, w.id)
		if k := l.keys[w.id]; k != nil {
			l.consider(k)
		}
	}
	if len(l.floorWait) == 0 {
		l.floorQueue = nil // the stale waiters with it
	}
}
