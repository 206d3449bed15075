package routing_test

import (
	"fmt"
	"slices"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/routing"
)

// printer is a Runtime that says what it is asked to do.
type printer struct{}

func (printer) Install(ep *config.Endpoint) error {
	fmt.Println("install", ep.ID, ep.Source)
	return nil
}

func (printer) Uninstall(id string, deleted bool) { fmt.Println("uninstall", id, deleted) }

// The config file defines two endpoints, one of them a tenant's; the admin
// API adds one with the id the file owns (kept shadowed) and one of its
// own. Events are matched by type and tenant.
func Example() {
	x := routing.New(printer{}, nil)
	crm := config.Endpoint{ID: "crm", Events: []string{"order.*"}, Tenant: "acme"}
	ops := config.Endpoint{ID: "ops", Events: []string{">"}}
	if _, _, err := x.ApplyConfig([]config.Endpoint{crm, ops}); err != nil {
		fmt.Println(err)
	}
	_, err := x.PutAPI(config.Endpoint{ID: "ops", Events: []string{"user.*"}})
	fmt.Println(err)
	if _, err := x.PutAPI(config.Endpoint{ID: "billing", Events: []string{"invoice.*"}}); err != nil {
		fmt.Println(err)
	}
	for _, ev := range [][2]string{{"acme", "order.created"}, {"globex", "order.created"}, {"", "invoice.paid"}} {
		got := x.Match(ev[0], ev[1], nil)
		slices.Sort(got)
		fmt.Println(ev[0], ev[1], "->", got)
	}
	// The file drops ops: the API's definition comes back.
	if _, _, err := x.ApplyConfig([]config.Endpoint{crm}); err != nil {
		fmt.Println(err)
	}
	x.RemoveAPI("billing")
	// Output:
	// install crm config
	// install ops config
	// endpoint "ops" is defined in the config file
	// install billing api
	// acme order.created -> [crm ops]
	// globex order.created -> [ops]
	//  invoice.paid -> [billing ops]
	// install ops api
	// uninstall billing true
}
