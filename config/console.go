package config

// Console configures what the console, the portal and the admin API's
// event view show.
type Console struct {
	// ShowPayloads shows an event's payload (its first 64 KiB) in the
	// event view of the admin API (GET /api/v1/events/{id}), the console
	// and the portal. True (the default); false leaves every payload out
	// and says so ("data_hidden": true).
	ShowPayloads bool `yaml:"show_payloads"`
}
