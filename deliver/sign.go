package deliver

import "github.com/hookjet/hookjet/signature"

// Signer signs requests with the Standard Webhooks scheme; it is
// [signature.Signer], the implementation the receiver side verifies with.
type Signer = signature.Signer

// NewSigner returns a Signer for the given decoded keys (see
// [signature.DecodeSecret]); see [signature.NewSigner].
func NewSigner(keys ...[]byte) *Signer { return signature.NewSigner(keys...) }
