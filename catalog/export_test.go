package catalog

// OnFastPath reports whether payload passes t's fast path (fast.go), for
// the external benchmark to prove it measures that path.
func (t *Type) OnFastPath(payload []byte) bool {
	return t.fast != nil && fastValid(t.fast, payload)
}
