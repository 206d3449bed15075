package filter_test

import (
	"fmt"

	"github.com/hookjet/hookjet/filter"
)

func Example() {
	f, err := filter.Compile(`data.amount > 1000 && data.currency == "EUR"`, filter.Options{})
	if err != nil {
		panic(err)
	}
	// One Event per event, shared by every endpoint's filter.
	ev := filter.NewEvent(filter.Input{
		Type: "order.created",
		ID:   "evt_1",
		Data: []byte(`{"amount": 1500, "currency": "EUR"}`),
	}, filter.Limits{})
	ok, err := f.Match(ev)
	fmt.Println(ok, err)

	_, err = filter.Compile(`data.amount >`, filter.Options{})
	fmt.Println(err != nil)
	_, err = filter.Compile(`data.flag`, filter.Options{})
	fmt.Println(err)
	// Output:
	// true <nil>
	// true
	// filter: 1:1: yields dyn, not bool (a field of data is dyn: compare it, e.g. data.flag == true)
}
