package signature

import "errors"

// ErrSecret is wrapped by every error from [DecodeSecret]: the value is not a
// "whsec_<base64>" signing secret of [MinSecretBytes] to [MaxSecretBytes]
// bytes. The errors never contain the secret.
var ErrSecret = errors.New("invalid webhook secret")
