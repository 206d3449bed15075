// Package test holds hookjet's end-to-end tests: hookjet started in
// process (package server, through the harness in harness_test.go) or as the
// built binary, against an embedded nats-server or a cluster of separate
// ones, with receivers that verify signatures; crashes, power cuts, the
// console in a browser and a newcomer's first hour. The package has no
// code of its own outside its tests.
package test
