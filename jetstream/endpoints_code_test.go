package jetstream

import (
	"testing"
	"time"
)

// An endpoint's filter and transform are stored, opened and part of the
// digest that tells processes their shared definitions apart.
func TestEndpointStoreKeepsFilterAndTransform(t *testing.T) {
	s := openStore(t, startJS(t))
	spec := testSpec("crm")
	spec.Filter = `data.amount > 1000`
	spec.Transform = "function handler(w) { return w }"
	ms := 80 * time.Millisecond
	spec.Overrides.TransformTimeout = &ms
	rec := s.Record(spec)
	if rec.Filter != spec.Filter || rec.Transform != spec.Transform {
		t.Fatalf("record %+v", rec)
	}
	back, err := s.Spec(rec)
	if err != nil {
		t.Fatal(err)
	}
	if back.Filter != spec.Filter || back.Transform != spec.Transform || *back.Overrides.TransformTimeout != ms {
		t.Fatalf("spec %+v", back)
	}
	other := spec
	other.Filter = `data.amount > 1001`
	if s.Digest(spec) == s.Digest(other) {
		t.Error("the digest ignores the filter")
	}
	other = spec
	other.Transform = "function handler(w) { w.cancel = true; return w }"
	if s.Digest(spec) == s.Digest(other) {
		t.Error("the digest ignores the transform")
	}
}
