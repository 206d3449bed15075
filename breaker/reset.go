package breaker

// Reset closes endpoint id's breaker by hand (an operator who knows the
// endpoint is back): its run of failures is forgotten, its cooldown returns
// to the base, and a half-open probe still out no longer holds the others
// back. A breaker that was open or half-open reports its transition to
// Closed as every transition is reported (persisted first). Reset reports
// whether the breaker was not closed; unknown ids are ignored.
func (r *Registry) Reset(id string) bool {
	e := r.lookup(id)
	if e == nil {
		return false
	}
	e.mu.Lock()
	e.consecutive = 0
	e.probeOut = false
	changed := e.state != Closed
	e.cooldown = e.settings.Cooldown
	if changed {
		r.transition(e, Closed, r.now())
	} else {
		r.touch(e)
	}
	e.mu.Unlock()
	if changed {
		r.notify()
	}
	return changed
}
