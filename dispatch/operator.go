package dispatch

import (
	"time"

	"github.com/hookjet/hookjet/dispatch/operate"
)

// Operator carries out the operator's actions on this engine (package
// operate): test events, redelivery, a deleted endpoint's deliveries
// dropped, breaker resets.
func (d *Dispatcher) Operator() *operate.Operator { return d.operator }

// newOperator builds d's operator, which counts tasks with tasks: after
// d's state bucket.
func newOperator(d *Dispatcher, tasks operate.TaskCounter) *operate.Operator {
	return operate.New(operate.Options{
		Log: d.log, Now: d.now, JS: d.o.JS, NC: d.o.NC, Published: d.o.Metrics.Published, Breakers: d.o.Breakers,
		Endpoints: endpointConfigs{d}, States: d.states, Tasks: tasks, Done: d.life.loopCtx, Own: d.o.Operational,
		Wake: func(id string) { d.drains.Note(id, time.Time{}) },
	})
}
