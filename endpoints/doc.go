// Package endpoints holds what the admin API, the endpoint store and the
// delivery engine say about an endpoint created through the API without
// any of them lending the others its types: its effective settings as the
// API shows them ([SettingsOf]). It imports neither NATS nor HTTP.
package endpoints
