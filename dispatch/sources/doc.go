// Package sources keeps the engine's endpoint table in step with where
// endpoints are defined: the config file (Apply, at start and on SIGHUP),
// the admin API's bucket (WatchEndpoints; Applied and Removed put the
// answering process's own writes in force before the API answers), and the
// other processes' config files (ShareConfigEndpoints: this file's
// endpoints stored for them, theirs applied here). Every endpoint put in
// force gets its breaker's settings.
//
// It imports the endpoint table (routing), the stores (jetstream), config
// and breaker; never the engine, which is the table's routing.Runtime.
package sources
