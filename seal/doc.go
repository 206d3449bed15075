// Package seal encrypts values at rest with AES-256-GCM: the signing secrets
// and header values of endpoints created through the admin API, which live
// in a NATS KV bucket that anyone with NATS access can read.
//
// A sealed value is a version byte, a random 96-bit nonce and the GCM
// ciphertext with its tag. Each value is sealed with a context (for example
// the endpoint id and field), authenticated but not stored, so that a sealed
// value copied to another endpoint or field does not open.
package seal
