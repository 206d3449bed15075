package endpoints

import (
	"reflect"
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
)

// Every field of config.Settings shows in the API's settings view: a
// setting added to the endpoint and forgotten in SettingsOf fails here,
// found by reflection, without a change to this test.
func TestSettingsOfShowsEverySetting(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	base := config.Endpoint{ID: "a", Settings: config.Default().Defaults}
	want := SettingsOf(base, now)
	n := 0
	var walk func(v reflect.Value, name string)
	walk = func(v reflect.Value, name string) {
		if v.Kind() == reflect.Struct {
			for i := range v.NumField() {
				walk(v.Field(i), name+"."+v.Type().Field(i).Name)
			}
			return
		}
		n++
		old := reflect.ValueOf(v.Interface())
		switch v.Kind() {
		case reflect.Int, reflect.Int64:
			v.SetInt(v.Int() + 1001) // durations too: a visible change
		case reflect.Float64:
			v.SetFloat(v.Float() + 1.5)
		case reflect.String: // the enumerations: their other value
			other := map[string]string{config.OrderingNone: config.OrderingKey, config.OnDeadLetterSkip: config.OnDeadLetterHold}[v.String()]
			if other == "" {
				t.Fatalf("%s: %q; teach this test its other value", name, v.String())
			}
			v.SetString(other)
		default:
			t.Fatalf("%s: a %s; teach this test to change it", name, v.Type())
		}
		if got := SettingsOf(base, now); reflect.DeepEqual(got, want) {
			t.Errorf("SettingsOf ignores %s", name)
		}
		v.Set(old)
	}
	walk(reflect.ValueOf(&base.Settings).Elem(), "Settings")
	if n < 10 {
		t.Fatalf("walked %d settings; the walk is broken", n)
	}
	if got := SettingsOf(base, now); !reflect.DeepEqual(got, want) {
		t.Fatal("the walk left a change behind")
	}
}

// Only the secrets still ahead expire in the view, in UTC.
func TestSettingsOfSecretsExpire(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ahead := now.Add(time.Hour).In(time.FixedZone("X", 3600))
	ep := config.Endpoint{Settings: config.Default().Defaults, SecretExpiry: []time.Time{{}, now.Add(-time.Minute), ahead}}
	got := SettingsOf(ep, now).SecretsExpire
	if len(got) != 1 || !got[0].Equal(ahead) || got[0].Location() != time.UTC {
		t.Fatalf("SecretsExpire = %v, want [%v] in UTC", got, ahead.UTC())
	}
}
