// Command bench is the end-to-end benchmark harness that `make bench` runs:
//
//	go run ./test/bench -out bench-results.json
//
// In one process and one run it measures the raw HTTP ceiling (a plain
// keep-alive Go client POSTing the same payloads to the same loopback
// receiver) and hookjet end to end (publish → JetStream file storage →
// fan-out → signed POST → 2xx → ack) in several scenarios, prints a table with
// every target of the issue marked PASS or MISS, and writes everything to a
// JSON file.
//
// Everything runs in this one process (but for cost116 and floor116): the receiver (one net/http listener,
// one path per endpoint), hookjet started with server.Start and its embedded
// NATS server (data in a temporary directory removed after each scenario), and
// the publisher (nats.go, asynchronous JetStream publishes with Nats-Msg-Id).
// CPU time and peak RSS are therefore those of the whole process, receiver and
// publisher included; the report says so wherever it matters.
//
// Scenarios (-scenarios, comma separated, default all but the groups'):
//
//	raw            the raw ceiling: N goroutines POST to the receiver for a fixed time
//	healthy10      10 healthy endpoints, each event to exactly one endpoint
//	               (every scenario runs with nats.sync: always, hookjet's
//	               default: each event fsynced before its PubAck)
//	healthy10fast  as healthy10 with nats.sync: 2m (acknowledged before fsync)
//	slow10         as healthy10, but endpoint e0 answers after 2 s
//	dead10         as healthy10, but endpoint e0 never answers (its timeout is 1 s)
//	floor          the JetStream-only floor: the same publisher, payloads and
//	               stream settings, one durable consumer that acks, no HTTP,
//	               in-process connections; at full speed, then at 116 events/s
//	               with the publisher in an outside process (floor116);
//	               the server syncs always, as hookjet's embedded one
//	floorfast      the floor at full speed with the server's 2m sync interval
//	endpoints1000  1,000 endpoints (max_in_flight 4), events round-robin
//	endpoints10000 10,000 endpoints configured, 1,000 of them get the events
//	dead1000       1,000 endpoints, every 10th dead (half connection refused,
//	               half always 503); rate of the 900 healthy ones
//	endpoints100000 100,000 endpoints configured: ready time, idle RSS and CPU
//	               over 10 s, then events to 10 of them
//	startup100k    the built binary (go build ./cmd/hookjet, then hookjet
//	               serve) with 100,000 endpoints in its file, nats.sync:
//	               always (startup100k) and 2m (startup100kfast), each on an
//	               empty data_dir and again on the same one (-restart):
//	               exec to /readyz 200, VmRSS of that process at ready and
//	               after 10 s idle, VmHWM, "slow consumer" lines in its log
//	latency        10 endpoints at a fixed 2,000 events/s; publish→delivery percentiles
//	cost           10 endpoints at 116 events/s (10 million a day); CPU share of one core
//	cost116        as cost, with the publisher and the receiver in an outside
//	               process (this binary again), so the CPU is hookjet's and its
//	               embedded NATS server's alone
//	apicreate10000 10,000 endpoints created through POST /api/v1/endpoints, one
//	               request each, 4 clients at a time; then idle RSS and CPU
//	backlog20000   1 endpoint disabled while 20,000 events for it are parked as
//	               tasks, then enabled: the rate its drain delivers them at
//	healthy10nolog as healthy10 with the delivery log off (log.enabled: false);
//	               every other scenario runs with it on, the default
//	healthy10fastnolog as healthy10fast with the delivery log off
//	cost116nolog   as cost116 with the delivery log off
//	cluster3       one hookjet (this process) on a real 3-node cluster of
//	               nats-server processes (bin/nats-server, built if missing;
//	               R3 streams, the server's default sync), 10 endpoints, then
//	               three hookjet processes on the same cluster, each connected
//	               to its own node (cluster3x3; in this process, so they share
//	               its 2 cores with the three nodes), then the JetStream-only
//	               floor on the same cluster (cluster3floor); targets: one
//	               process >= 50% of healthy10fast's rate in the same run (the
//	               same sync policy), three together >= 90% of one, each of
//	               the three >= 20% of the deliveries; the ratios to healthy10
//	               and to the floor are reported. CPU is this process's only;
//	               "other processes" include the nodes
//	history10m     -history-records (default 10,000,000) delivery-log records and
//	               as many remembered ids written through hookjet's writers to
//	               a nats-server alone in a child process (this binary again):
//	               its Go heap per record after each fill and after a restart
//	               (targets: <= 16 B), then a process indexing the log and the
//	               lookups' p99 (an event's records <= 50 ms, a page of 100 <=
//	               100 ms)
//
// The isolation scenarios (isolation.go, isolation_bounds.go) use
// hookjet's default worker settings (worker.concurrency 256, max_in_flight
// 16). Each mix runs twice at the same offered rate: "<name>-base" with every
// endpoint healthy, then the mix; the targets compare the endpoints healthy
// in the mix (p99 within 250 ms, rate >= 90%):
//
//	slow16         16 endpoints answer after 3 s beside a fast one, 200 events/s
//	               (half to the fast one)
//	slow1at2500    one endpoint answers after 2 s beside a healthy one, 2,500 events/s
//	ratelimited70  70 endpoints at 0.1 rps with growing backlogs beside one that
//	               refuses each event's first attempt (retry due within 0.5 s:
//	               the retry must come within 3 s) and a healthy one
//	dead10pct      1,000 endpoints, every 10th connection refused, 2,000 events/s
//	logfull        300 MiB through streams.max_bytes 64 MiB (tasks_max_bytes
//	               32 MiB) with a dead endpoint matching everything: refused
//	               publishes, its deliveries accounted for (pending + dead
//	               letters = owed), HOOKJET_TASKS' largest size
//	consumers1100  1,100 endpoints each drain one parked task: consumers on
//	               HOOKJET_TASKS a minute after the last delivery
//
// The burst scenarios (burst.go) publish every event at once (not paced)
// with hookjet's default worker settings; a sampler reads the receiver every
// 100 ms for the longest stretch without a delivery while events were owed
// (target: at most 1 s), and HOOKJET_DLQ is counted at the end:
//
//	burst10        60,000 events round-robin over 10 healthy endpoints,
//	               nats.sync always; its rate beside the raw ceiling
//	burst10fast    as burst10 with nats.sync 2m
//	burst1         300,000 events to one healthy endpoint (far past its
//	               max_backlog of waiting deliveries): every one delivered,
//	               none dead-lettered
//	burst1fast     as burst1 with nats.sync 2m
//
// The per-key ordering scenarios (ordered.go) are the group "ordered", left
// out of the default run for its time budget (-scenarios ordered, or make
// bench-ordered). Events carry Hookjet-Ordering-Key k<n % keys>, published
// at once (but for the paced pair) to one endpoint with hookjet's default
// worker settings:
//
//	ordered1000    30,000 events over 1,000 keys, ordering: key
//	unordered1000  the same endpoint and events without ordering; target:
//	               ordered1000 >= 0.8 x unordered1000
//	ordered1000fast, unordered1000fast  the same with nats.sync 2m
//	orderedbase    200 keys x 20 events, ordering: key
//	orderedfail    the same while key k0's requests answer 500 for 10 s from
//	               the first of them; target: the other keys' p99 (publish to
//	               first 2xx) within 250 ms of orderedbase's
//	orderedbasepaced, orderedfailpaced  the same pair published at 200/s
//	               (one event per key per second) instead of at once, so
//	               that the p99 is each event's own latency, not the time
//	               the backlog takes; same target
//	keys100k       100,000 keys, one event each: every one delivered, the
//	               JetStream consumers (a fixed few), peak RSS and Go heap
//
// Each counts the events first answered 2xx before the previous one of
// their key (none may be, ordered).
//
// The publish scenario (publish.go) compares the three ways in, in both
// sync modes (nats.sync always and 2m, one hookjet each): 1, 16 and 64
// client goroutines, each sending one unique 500 B event and waiting until
// it is stored, for rawDuration, as JetStream publishes, NATS requests to
// hookjet.publish.<type> and POST /api/v1/events; then HTTP at 1,000
// requests/s for latencyDuration. Runs are named publish_<way>_<sync>_<n>;
// -profile publish profiles the request run at 64 clients with always.
//
// The filters and transform scenarios (shape.go) each run their baseline
// first, then the same endpoints with the feature: filters0 and filters,
// 10,000 endpoints configured of which 1,000 get events (20,000, 5,000 with
// -quick), each active one filtering on its event's type; transform0 and
// transform, 10 endpoints each with a 10-line script. Their targets are the
// rate against the baseline (>= 80%, >= 50%) and the CPU per delivery each
// evaluation or run adds.
//
// The destinations scenario (destinations.go) runs, for NATS (a second
// nats-server with a stream), RabbitMQ (a throw-away rabbitmq-server node;
// left out with a note when it is not installed) and Kafka (franz-go's
// kfake): the client library publishing 20,000 signed events (3,000 with
// -quick) directly, each waiting for the broker's ack (<type>-direct); a
// JetStream-only relay storing as many in a stream and publishing each to
// the broker before acking it (<type>-relay: what any system that stores an
// event before it acknowledges and then forwards it pays, with no ledger,
// log or matching); then hookjet delivering as many to 10 endpoints of that
// type on that broker (<type>), counted by the broker (the stream's or the
// queue's messages; Kafka by hookjet's metrics). The target is emptied
// before each run, and hookjet and the relay run with nats.sync 2m: the
// broker runs compare delivery paths, the embedded server's fsync per
// message is the sync scenarios' subject. dest-webhook is hookjet
// delivering them to 10 webhook endpoints, the reference beside them;
// dest-idle10000 holds 10,000 idle NATS endpoints on one server, for memory,
// idle CPU once the file's endpoints are stored for other processes, and
// the connections the server sees (none while idle, one once 100 of them
// delivered). -profile nats|rabbitmq|kafka|dest-idle10000 profiles those
// runs' windows.
//
// Every figure is printed beside the baselines of the same run: the raw
// ceiling, and the floor.
//
// Every hookjet a run starts reserves smaller streams than the defaults
// (benchLimits: streams.max_bytes 4 GiB, tasks 2 GiB, dead letters 256 MiB,
// log 2 GiB; logfull sets its own), so that the run fits a machine with
// less than 50 GB of disk free; every scenario's events still fit.
//
// -quick runs smaller counts and shorter durations for a smoke test;
// -cpuprofile FILE writes a CPU profile of the idle and measured windows of the
// scenario named by -profile (default healthy10), -memprofile FILE a heap
// profile at the end of that window; -log FILE keeps hookjet's
// warnings and errors (otherwise they are only counted); -gapdump DIR
// writes, for the burst scenarios, a goroutine dump and the fan-out
// consumer's state (num_pending, num_ack_pending, num_waiting) during each
// stretch without a delivery that passes 0.7 s.
package main
