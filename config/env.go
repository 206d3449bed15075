package config

import (
	"reflect"
	"strings"
)

// applyEnv overrides the keys of struct v from environment variables named
// envPrefix_<KEY>, derived from the yaml tags: nested mappings add their key
// (HOOKJET_DEFAULTS_RETRY_MAX_ATTEMPTS), lists take comma-separated values.
// endpoints are not overridable. key is v's path for error messages.
func (d *decoder) applyEnv(v reflect.Value, key, envPrefix string) {
	for _, f := range fieldsOf(v.Type()) {
		fv := v.FieldByIndex(f.index)
		path := child(key, f.name)
		name := envPrefix + "_" + strings.ToUpper(f.name)
		t := fv.Type()
		switch {
		case t == endpointsType, t == inboundSourcesType:
			continue
		case t.Kind() == reflect.Struct && t != secretType:
			d.applyEnv(fv, path, name)
			continue
		}
		s := d.getenv(name)
		if s == "" {
			continue
		}
		if err := d.setScalar(fv, s, ""); err != nil {
			d.fail(name, err)
			d.bad = append(d.bad, path)
		}
	}
}

// EnvVars returns the names of the environment variables that override
// configuration keys, in the order of the YAML keys.
func EnvVars() []string {
	var names []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for _, f := range fieldsOf(t) {
			ft := t.FieldByIndex(f.index).Type
			name := prefix + "_" + strings.ToUpper(f.name)
			switch {
			case ft == endpointsType, ft == inboundSourcesType:
			case ft.Kind() == reflect.Struct && ft != secretType:
				walk(ft, name)
			default:
				names = append(names, name)
			}
		}
	}
	walk(reflect.TypeFor[Config](), "HOOKJET")
	return names
}
