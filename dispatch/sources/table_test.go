package sources

import (
	"reflect"
	"testing"

	"github.com/hookjet/hookjet/config"
)

// Every field of an endpoint's breaker settings reaches its breaker: one
// added to config.Breaker and forgotten in breakerSettings fails here.
func TestBreakerSettingsCarryEveryField(t *testing.T) {
	ep := config.Endpoint{Settings: config.Default().Defaults}
	want := breakerSettings(ep)
	v := reflect.ValueOf(&ep.Breaker).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		old := f.Int()
		f.SetInt(old + 1)
		if breakerSettings(ep) == want {
			t.Errorf("breakerSettings ignores breaker.%s", v.Type().Field(i).Name)
		}
		f.SetInt(old)
	}
}
