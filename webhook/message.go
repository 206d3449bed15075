package webhook

import (
	"fmt"
	"strings"
)

// VerifyMessage verifies a message hookjet published to a broker (NATS,
// Kafka, RabbitMQ): h holds its headers as the broker's client gives them,
// in any case (a NATS message's Header, or a map built from Kafka record
// headers or AMQP headers), and body is its payload, byte for byte. The
// checks and errors are [Verifier.Verify]'s. A consumer that reads long
// after the message was published chooses a tolerance to match with
// [WithTolerance]: webhook-timestamp is when hookjet published it.
func (v *Verifier) VerifyMessage(h map[string][]string, body []byte) error {
	var id, ts string
	var sigs []string
	for k, vs := range h {
		switch {
		case strings.EqualFold(k, HeaderID):
			id = first(vs)
		case strings.EqualFold(k, HeaderTimestamp):
			ts = first(vs)
		case strings.EqualFold(k, HeaderSignature):
			sigs = append(sigs, vs...)
		}
	}
	return v.verify(id, ts, sigs, body)
}

// VerifyValues verifies a message from the values of its three headers,
// for consumers whose client hands headers one at a time.
func (v *Verifier) VerifyValues(id, timestamp, signature string, body []byte) error {
	return v.verify(id, timestamp, []string{signature}, body)
}

// verify checks id, ts and sigs as [Verifier.Verify] does.
func (v *Verifier) verify(id, ts string, sigs []string, body []byte) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: %s", ErrMissingHeader, HeaderID)
	case ts == "":
		return fmt.Errorf("%w: %s", ErrMissingHeader, HeaderTimestamp)
	case !hasNonEmpty(sigs):
		return fmt.Errorf("%w: %s", ErrMissingHeader, HeaderSignature)
	}
	if err := v.checkTimestamp(ts); err != nil {
		return err
	}
	if !v.signer.Verify(id, ts, sigs, body) {
		return ErrNoMatchingSignature
	}
	return nil
}
