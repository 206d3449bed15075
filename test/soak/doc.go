// Command soak is hookjet's fault campaign: a real 3-node nats-server
// cluster in separate processes, several `hookjet serve` processes sharing
// it (R3 streams, each reaching NATS through TCP proxies of its own), a
// receiver that verifies signatures and logs what arrives, steady load from
// a producer that retries with the same Nats-Msg-Id, and a seeded schedule
// of faults: kill -9 and SIGSTOP/SIGCONT of nodes and of hookjet processes,
// latency and silent partitions between a hookjet and NATS (toxiproxy, run
// in-process). After a quiet period a checker reads the receiver's log and
// HOOKJET_DLQ: every acknowledged event must have reached every matching
// endpoint at least once or be dead-lettered with a reason, and duplicates
// must stay within the bound. The seed is printed at the start and in the
// summary; -seed reproduces the schedule. Exit status 1 on a loss, on
// duplicates over the bound, on a bad signature, or when the system did not
// recover from a fault.
//
// With root and /dev/fuse, n3's store is on internal/powercut's filesystem
// and the schedule includes power cuts of n3: kill -9, then every file goes
// back to what n3 had fsynced. Elsewhere that fault is left out (and said so).
//
//	make soak                              # 10 minutes, 30 faults
//	go run ./test/soak -duration 75s -faults 6 -seed 42
//
// Everything listens on 127.0.0.1; every process it starts is killed when
// it ends, also when it fails or is interrupted.
package main
