package dispatch

// matcher is the match stage: the endpoints an event goes to. The index
// (package routing's endpoint table) matches the event's type against the
// patterns of the endpoints of its tenant and of those without one; an
// endpoint's payload filter joins here. A delivery stored earlier (a task,
// an ordered entry) is checked again when it is taken, against the
// endpoint as it is then (notForEndpoint, task.go).
type matcher struct {
	index patternIndex
}

// patternIndex is the pattern index of the endpoints in force
// (routing.Table).
type patternIndex interface {
	Match(tenant, eventType string, dst []string) []string
}

// match appends to dst the ids of the endpoints ev goes to. An event whose
// tenant header is not a tenant (ev.badTenant) matches the endpoints
// without a tenant only: the caller dead-letters it there (tenant.go).
func (m matcher) match(ev *event, dst []string) []string {
	return m.index.Match(ev.tenant, ev.typ, dst)
}
