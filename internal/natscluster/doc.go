// Package natscluster runs a real JetStream cluster of separate nats-server
// processes on 127.0.0.1, for the fault campaign (test/soak) and the
// cluster3 benchmark (test/bench). Each node is a child process of the
// caller, started from a nats-server binary built from the module in go.mod
// (EnsureBinary), with a fixed client, route and monitoring port and its own
// store directory, so it can be killed with SIGKILL, paused with SIGSTOP and
// started again where its peers and clients expect it.
//
// The nodes do not advertise each other to clients (cluster.no_advertise):
// a client reaches exactly the URLs it was given, so a TCP proxy in front of
// the nodes sees all of that client's traffic.
//
// A Cluster owns its processes: Close kills every node, and each node is also
// started with a parent-death signal, so none outlives the caller.
package natscluster
