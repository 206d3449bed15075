package routing

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
)

// Every field of config.Endpoint, however deep, takes part in Same: a
// setting added to the endpoint is never silently ignored by a reload or
// an API change. The walk finds the fields by reflection, so a new field is
// covered (or this test fails) without a change here.
func TestSameComparesEveryField(t *testing.T) {
	base := ep("a", "https://a/1", "order.*")
	base.Headers = map[string]config.Secret{"X-Key": config.NewSecret("v")}
	base.SecretExpiry = []time.Time{time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	base.CreatedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base.UpdatedAt = base.CreatedAt
	n := 0
	forEachField(reflect.TypeOf(base), nil, func(path []int, name string) {
		n++
		b := base
		change(t, reflect.ValueOf(&b).Elem().FieldByIndex(path), name)
		if Same(base, b) {
			t.Errorf("Same ignores a change of %s", name)
		}
		if Same(b, base) {
			t.Errorf("Same ignores a change of %s (the other way)", name)
		}
	})
	if n < 20 {
		t.Fatalf("walked %d fields of config.Endpoint; the walk is broken", n)
	}
	if !Same(base, base) {
		t.Fatal("an endpoint differs from itself")
	}
}

// forEachField calls fn with the index path and dotted name of every leaf
// field of typ: structs are walked into, time.Time is a leaf.
func forEachField(typ reflect.Type, path []int, fn func(path []int, name string)) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		p := append(append([]int(nil), path...), i)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Time{}) && f.Type != reflect.TypeOf(config.Secret{}) {
			forEachField(f.Type, p, fn)
			continue
		}
		fn(p, f.Name)
	}
}

// change sets v to a different value of its kind.
func change(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "-changed")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1) // time.Duration too
	case reflect.Float64:
		v.SetFloat(v.Float() + 0.5)
	case reflect.Pointer: // *bool: unset and set differ
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			v.Set(reflect.Zero(v.Type()))
		}
	case reflect.Struct: // time.Time or config.Secret
		switch x := v.Interface().(type) {
		case time.Time:
			v.Set(reflect.ValueOf(x.Add(time.Second)))
		case config.Secret:
			v.Set(reflect.ValueOf(config.NewSecret(x.Reveal() + "x")))
		}
	case reflect.Slice:
		switch x := v.Interface().(type) {
		case []string:
			v.Set(reflect.ValueOf(append(append([]string(nil), x...), "more.*")))
		case []config.Secret:
			v.Set(reflect.ValueOf([]config.Secret{config.NewSecret(secret + "x")}))
		case []time.Time:
			v.Set(reflect.ValueOf([]time.Time{x[0].Add(time.Hour)}))
		default:
			t.Fatalf("%s: no way to change a %s; teach change", name, v.Type())
		}
	case reflect.Map:
		if x, ok := v.Interface().(map[string]config.Secret); ok {
			v.Set(reflect.ValueOf(map[string]config.Secret{"X-Key": config.NewSecret(x["X-Key"].Reveal() + "2")}))
			return
		}
		t.Fatalf("%s: no way to change a %s; teach change", name, v.Type())
	default:
		t.Fatalf("%s: no way to change a %s; teach change", name, v.Type())
	}
}

// What does not change a definition: times in another location or with a
// monotonic reading, and an empty list or map against none.
func TestSameIgnoresRepresentation(t *testing.T) {
	a := ep("a", "https://a/1")
	a.UpdatedAt = time.Now() // monotonic reading
	a.CreatedAt = a.UpdatedAt
	b := a
	b.UpdatedAt = a.UpdatedAt.Round(0).In(time.FixedZone("X", 3600))
	b.CreatedAt = a.CreatedAt.UTC()
	if !Same(a, b) {
		t.Fatal("the same instants in another form differ")
	}
	a.Events, a.Headers, a.SecretExpiry = nil, nil, nil
	b.Events, b.Headers, b.SecretExpiry = []string{}, map[string]config.Secret{}, []time.Time{}
	if !Same(a, b) {
		t.Fatal("empty lists and maps differ from none")
	}
	// Order of patterns is part of the definition as the file writes it.
	a.Events, b.Events = []string{"x.*", "y.*"}, []string{"y.*", "x.*"}
	if Same(a, b) {
		t.Fatal("reordered patterns compare the same; the old comparison told them apart")
	}
	// A header's value is compared, not only its name.
	a.Headers = map[string]config.Secret{"X-Key": config.NewSecret("one")}
	b.Events = a.Events
	b.Headers = map[string]config.Secret{"X-Key": config.NewSecret("two")}
	if Same(a, b) || !strings.Contains(b.Headers["X-Key"].Reveal(), "two") {
		t.Fatal("a header value change is ignored")
	}
}

// A reload that changes only a setting deep in the endpoint (here the
// breaker's slow_p95) reaches the runtime: the table installs it.
func TestApplyConfigReachesTheRuntimeForAnySetting(t *testing.T) {
	e := newEngine()
	x := New(e, nil)
	a := ep("a", "https://a/1")
	if _, _, err := x.ApplyConfig([]config.Endpoint{a}); err != nil {
		t.Fatal(err)
	}
	e.took()
	a.Breaker.SlowP95 += time.Second
	changed, _, err := x.ApplyConfig([]config.Endpoint{a})
	if err != nil || len(changed) != 1 {
		t.Fatalf("changed %v err %v", ids(changed), err)
	}
	wantCalls(t, e, "install a https://a/1")
	got, _ := x.Get("a")
	if got.Breaker.SlowP95 != a.Breaker.SlowP95 {
		t.Fatalf("slow_p95 in force %v, want %v", got.Breaker.SlowP95, a.Breaker.SlowP95)
	}
}
