package dispatch

import "github.com/hookjet/hookjet/api"

// heldKeys says which of endpoint id's ordering keys wait on an earlier
// delivery (nil: none, the endpoint is not ordered, or this process does
// not deliver the ordered lane: only its owner knows; see lane.go).
func (d *Dispatcher) heldKeys(id string) *api.HeldKeys { return d.lane.held(id) }
