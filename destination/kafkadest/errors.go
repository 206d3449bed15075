package kafkadest

import "errors"

// ErrSASL marks a connection the cluster did not authenticate: a SASL
// handshake that failed, in the cluster's words (SASL_AUTHENTICATION_FAILED)
// or by closing the connection. It is permanent.
var ErrSASL = errors.New("SASL authentication failed")
