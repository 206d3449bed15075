package webhook

// Exported for tests in package webhook_test.
var CanonicalKeys = map[string]string{
	HeaderID:        keyID,
	HeaderTimestamp: keyTimestamp,
	HeaderSignature: keySignature,
}
