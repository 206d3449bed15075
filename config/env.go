package config

import (
	"errors"
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
		case t == endpointsType, t == inboundSourcesType, t == eventTypesType:
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
			if t == secretType && isReference(s) && d.postpone(name, path, 0, err) {
				continue
			}
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
			case ft == endpointsType, ft == inboundSourcesType, ft == eventTypesType:
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

// CheckEnv refuses the HOOKJET_* variables of environ ("NAME=value" pairs,
// as os.Environ returns them) that are neither configuration keys
// ([EnvVars]) nor one of others (variables the caller reads itself). The
// error is an errors.Join of [*FieldError], one per unknown variable, each
// naming it and the known one it is closest to.
func CheckEnv(environ []string, others ...string) error {
	known := map[string]bool{}
	for _, n := range append(EnvVars(), others...) {
		known[n] = true
	}
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "HOOKJET_") || known[name] {
			continue
		}
		msg := "unknown environment variable: not a configuration key (HOOKJET_<SECTION>_<KEY>, such as HOOKJET_ADMIN_TOKEN)"
		best, dist := "", 4
		for k := range known {
			if d := editDistance(name, k); d < dist || d == dist && k < best {
				best, dist = k, d
			}
		}
		if best != "" {
			msg += "; did you mean " + best + "?"
		}
		errs = append(errs, &FieldError{Key: name, Err: errors.New(msg)})
	}
	return errors.Join(errs...)
}
