package routing

import "errors"

// ErrConfigOwned: the config file defines the endpoint's id; the file's
// definition is in force and the API's is kept shadowed.
var ErrConfigOwned = errors.New("defined in the config file")

// ErrAPIOwned: another process's config file defines an endpoint whose id
// this process's admin API has; the API's definition stays in force here.
var ErrAPIOwned = errors.New("defined through the admin API here")
