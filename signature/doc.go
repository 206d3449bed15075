// Package signature is the Standard Webhooks signing scheme
// (https://www.standardwebhooks.com), written once for both sides: hookjet's
// sender (package deliver) signs with it and the receiver-side verifier
// (package webhook) checks with it.
//
// A delivery carries three headers, [HeaderID], [HeaderTimestamp] and
// [HeaderSignature]. The signature header holds one space-separated
// "v1,<base64>" entry per active secret, each the standard base64 encoding of
// HMAC-SHA256(key, id + "." + timestamp + "." + body). Secrets are written
// "whsec_<base64>"; [DecodeSecret] turns one into its key with the one set of
// rules that configuration, sender and receiver share.
//
// The package depends on the standard library only.
package signature
