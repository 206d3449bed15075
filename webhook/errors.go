package webhook

import (
	"errors"

	"github.com/hookjet/hookjet/signature"
)

// Errors returned by [Verifier.Verify]. They are wrapped with detail (for
// example the name of the missing header); match them with [errors.Is].
var (
	// ErrMissingHeader means webhook-id, webhook-timestamp or
	// webhook-signature is absent or empty.
	ErrMissingHeader = errors.New("webhook: missing header")
	// ErrInvalidTimestamp means webhook-timestamp is not a non-negative
	// integer number of seconds.
	ErrInvalidTimestamp = errors.New("webhook: invalid timestamp")
	// ErrTimestampTooOld means webhook-timestamp lies further in the past
	// than the tolerance: the request may be a replay.
	ErrTimestampTooOld = errors.New("webhook: timestamp too old")
	// ErrTimestampTooNew means webhook-timestamp lies further in the future
	// than the tolerance.
	ErrTimestampTooNew = errors.New("webhook: timestamp too new")
	// ErrNoMatchingSignature means no v1 entry of webhook-signature matches
	// any of the secrets: the request was not signed by the sender, or the
	// id, timestamp or body was changed on the way.
	ErrNoMatchingSignature = errors.New("webhook: no matching signature")
)

// Errors returned by [NewVerifier].
var (
	// ErrNoSecrets means NewVerifier was given no secret.
	ErrNoSecrets = errors.New("webhook: no secrets")
	// ErrInvalidSecret means a secret breaks the rules of
	// [signature.DecodeSecret]: it is not "whsec_" followed by standard
	// base64 of 24 to 64 bytes. It is [signature.ErrSecret]. The error never
	// contains the secret itself.
	ErrInvalidSecret = signature.ErrSecret
	// ErrInvalidTolerance means WithTolerance was given a duration that is
	// not positive.
	ErrInvalidTolerance = errors.New("webhook: tolerance must be positive")
)
