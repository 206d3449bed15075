package server

// Version is hookjet's version, set at build time with
// -ldflags "-X github.com/hookjet/hookjet/server.Version=...".
var Version = "0.1.0-dev"

// UserAgent is sent with every delivery.
func UserAgent() string { return "hookjet/" + Version }
