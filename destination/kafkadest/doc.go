// Package kafkadest is the Kafka destination (type "kafka"), over
// github.com/twmb/franz-go: each attempt produces the event to a topic and
// counts once every in-sync replica acknowledged it (acks=all, the
// idempotent producer), keyed by the event's ordering key, else its id, so
// that a key's records share a partition and keep their order.
//
// One client serves every endpoint on a cluster (same brokers, credentials,
// TLS and guard), made on the first attempt and closed when idle; 10,000
// idle endpoints hold none, busy ones one. Every broker connection,
// including those to the brokers the cluster advertises, is dialed through
// the SSRF guard's dialer. The package imports the destination vocabulary
// and franz-go, never the engine.
//
// The tests run against franz-go's kfake, a Kafka protocol cluster in Go:
// no Kafka broker is installed here.
package kafkadest
