package client

import (
	"net/url"
	"strconv"
)

// query builds a query string, leaving out empty values.
type query struct{ url.Values }

func (q *query) set(k, v string) {
	if v == "" {
		return
	}
	if q.Values == nil {
		q.Values = url.Values{}
	}
	q.Set(k, v)
}

func (q *query) setInt(k string, n int) {
	if n != 0 {
		q.set(k, strconv.Itoa(n))
	}
}
