package dispatch

import "github.com/hookjet/hookjet/api"

// heldKeys says which of endpoint id's ordering keys wait on an earlier delivery (nil: none, or the endpoint is not ordered).
func (d *Dispatcher) heldKeys(id string) *api.HeldKeys { return nil }
