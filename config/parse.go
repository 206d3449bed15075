package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// Load reads the YAML file at path and returns [Parse] of its content.
// getenv looks up environment variables (pass os.Getenv); nil means an empty
// environment. Its errors name the file.
func Load(path string, getenv func(string) string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	c, err := Parse(data, getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse builds a Config from YAML: [Default] values, overridden by data,
// overridden by HOOKJET_* environment variables, then endpoints resolved
// against the defaults, normalised and validated (see the package
// documentation). getenv looks up environment variables (pass os.Getenv);
// nil means an empty environment. On error the Config is nil and the error,
// which wraps [ErrInvalid], lists every problem found.
func Parse(data []byte, getenv func(string) string) (*Config, error) {
	return parse(data, getenv, readSecretFile)
}

// LoadClient is [Load] for a command that uses only part of the file (the
// CLI's client commands): a secret given as "env:NAME" or "file:/path"
// that cannot be read is left empty instead of failing the whole file, and
// [Config.Need] reports it for the keys the command uses. Everything else
// is checked as by Load.
func LoadClient(path string, getenv func(string) string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	c, err := ParseClient(data, getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.source = path
	return c, nil
}

// ParseClient is [Parse] with the secrets of [LoadClient] left for
// [Config.Need].
func ParseClient(data []byte, getenv func(string) string) (*Config, error) {
	return parseWith(data, getenv, readSecretFile, true)
}

// parse is Parse with the reading of "file:" secrets injected.
func parse(data []byte, getenv func(string) string, readFile func(string) (string, error)) (*Config, error) {
	return parseWith(data, getenv, readFile, false)
}

// parseWith is parse; lazy leaves the secret references that cannot be
// resolved for Config.Need.
func parseWith(data []byte, getenv func(string) string, readFile func(string) (string, error), lazy bool) (*Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	root, err := parseYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	d := &decoder{
		getenv:   getenv,
		readFile: readFile,
		lines:    make(map[string]int),
		budget:   nodeBudget(len(data)),
		lazy:     lazy,
	}
	c := Default()
	if root != nil {
		d.decode(root, reflect.ValueOf(&c).Elem(), "")
	}
	d.applyEnv(reflect.ValueOf(&c).Elem(), "", "HOOKJET")
	if c.Admin.TokenFile != "" {
		if !c.Admin.Token.IsZero() {
			d.fail("admin.token_file", errors.New("cannot be combined with admin.token"))
		} else if v, err := readFile(c.Admin.TokenFile); err != nil {
			if !d.postpone("admin.token_file", "admin.token", 0, err) {
				d.fail("admin.token_file", err)
			}
		} else {
			c.Admin.Token = NewSecret(v)
		}
	}
	c.Endpoints = d.endpoints(c.Defaults)
	if !lazy {
		var p problems
		for i := range c.Endpoints {
			readPEMPaths(&p, "endpoints["+strconv.Itoa(i)+"].auth", &c.Endpoints[i].Auth, readFile)
		}
		for _, fe := range p {
			d.fail(fe.Key, fe.Err)
		}
	}
	normalize(&c)

	errs := d.errs
	if d.budget < 0 {
		// The document was cut short; validating the rest would only add noise.
		return nil, joinErrors(errs, d.lines)
	}
	for _, e := range c.validate() {
		// A value that could not be decoded is left at its default, which may
		// then fail validation: report only the decoding problem. A secret
		// left for Need is not checked either.
		if !d.failed(e.Key) && !d.postponed(e.Key) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs, d.lines)
	}
	for _, u := range d.unresolved {
		if u.err.Line == 0 {
			u.err.Line = d.lines[u.err.Key]
		}
	}
	c.unresolved = d.unresolved
	return &c, nil
}

// joinErrors joins errs, adding the line of each key found in lines.
func joinErrors(errs []*FieldError, lines map[string]int) error {
	joined := make([]error, len(errs))
	for i, fe := range errs {
		if fe.Line == 0 {
			fe.Line = lines[fe.Key]
		}
		joined[i] = fe
	}
	return errors.Join(joined...)
}

// parseYAML returns the top-level node of the single YAML document in data,
// or nil when data holds no document or only null.
func parseYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("line %d: more than one YAML document", extra.Line)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	switch {
	case root.Kind == yaml.ScalarNode && root.ShortTag() == tagNull:
		return nil, nil
	case root.Kind != yaml.MappingNode:
		return nil, fmt.Errorf("line %d: the top level must be a mapping of keys such as data_dir and endpoints, got %s", root.Line, describe(root))
	}
	return root, nil
}

// nodeBudget bounds the YAML nodes a document of size bytes may expand to
// through aliases and merge keys: generous for legitimate reuse, linear in the
// input so that an "alias bomb" costs no more than a long file.
func nodeBudget(size int) int { return 100_000 + 4*size }

// YAML tags of scalars, as returned by yaml.Node.ShortTag.
const (
	tagNull  = "!!null"
	tagBool  = "!!bool"
	tagInt   = "!!int"
	tagFloat = "!!float"
	tagMerge = "!!merge"
)

var (
	durationType  = reflect.TypeFor[time.Duration]()
	secretType    = reflect.TypeFor[Secret]()
	endpointsType = reflect.TypeFor[[]Endpoint]()
)

// decoder decodes YAML nodes onto pre-filled Go values, driven by the values'
// types and yaml tags: keys the file leaves out keep their current value,
// which is how defaults and field-by-field overrides work. It collects every
// problem instead of stopping at the first.
type decoder struct {
	getenv   func(string) string
	readFile func(string) (string, error)
	errs     []*FieldError
	bad      []string       // keys that failed to decode
	lines    map[string]int // key path -> line of the key in the file
	budget   int            // nodes left to visit
	epNode   *yaml.Node     // the endpoints list, decoded after env overrides
	merging  []*yaml.Node   // mappings being merged with "<<", to refuse cycles
	// lazy (ParseClient) leaves the secret references that cannot be
	// resolved in unresolved instead of failing.
	lazy       bool
	unresolved []unresolved
}

// unresolved is a secret reference ParseClient could not resolve: the key
// it configures (path) and the error Config.Need returns for it.
type unresolved struct {
	path string
	err  *FieldError
}

// postpone records err, the failure to resolve the secret of key path
// (named errKey in the error, a line of the file when known), for
// Config.Need, and reports whether it did: only in lazy mode.
func (d *decoder) postpone(errKey, path string, line int, err error) bool {
	if !d.lazy {
		return false
	}
	d.unresolved = append(d.unresolved, unresolved{path: path, err: &FieldError{Key: errKey, Line: line, Err: err}})
	return true
}

// postponed reports whether key is, or is part of, a secret left for
// Config.Need.
func (d *decoder) postponed(key string) bool {
	for _, u := range d.unresolved {
		if under(key, u.path) {
			return true
		}
	}
	return false
}

// under reports whether key is prefix or one of its parts.
func under(key, prefix string) bool {
	return key == prefix || strings.HasPrefix(key, prefix+".") || strings.HasPrefix(key, prefix+"[")
}

// fail records a problem with key.
func (d *decoder) fail(key string, err error) {
	d.errs = append(d.errs, &FieldError{Key: key, Err: err})
	d.bad = append(d.bad, key)
}

// failAt records a problem with key at a line of the file.
func (d *decoder) failAt(key string, line int, err error) {
	d.errs = append(d.errs, &FieldError{Key: key, Line: line, Err: err})
	d.bad = append(d.bad, key)
}

// failed reports whether key, or a key it is part of, failed to decode.
func (d *decoder) failed(key string) bool {
	for _, b := range d.bad {
		if key == b || strings.HasPrefix(key, b+".") || strings.HasPrefix(key, b+"[") {
			return true
		}
	}
	return false
}

// spend takes one node from the budget that bounds how far aliases and merge
// keys may expand a document, reporting false (and an error, once) when it is
// exhausted.
func (d *decoder) spend(key string, line int) bool {
	if d.budget--; d.budget < 0 {
		if d.budget == -1 {
			d.failAt(key, line, errors.New("document too large or too deeply aliased"))
		}
		return false
	}
	return true
}

// child returns the path of a mapping key under parent.
func child(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// describe names a node's kind for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return "a scalar"
	}
}

// decode decodes n onto v; key is v's path for error messages.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, key string) {
	if !d.spend(key, n.Line) {
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.failAt(key, n.Line, errors.New("unknown alias"))
			return
		}
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == tagNull {
		return // unset: keep the default
	}
	t := v.Type()
	switch {
	case t == endpointsType && key == "endpoints":
		d.epNode = n // decoded by endpoints, against the final defaults
	case t == jsonType:
		d.decodeJSON(n, v, key)
	case t == secretType || t == durationType || isScalarKind(t.Kind()):
		if n.Kind != yaml.ScalarNode {
			d.failAt(key, n.Line, fmt.Errorf("want a single value, got %s", describe(n)))
			return
		}
		if err := d.setScalar(v, n.Value, n.ShortTag()); err != nil {
			if t == secretType && isReference(n.Value) && d.postpone(key, key, n.Line, err) {
				return
			}
			d.failAt(key, n.Line, err)
		}
	case t.Kind() == reflect.Pointer:
		e := reflect.New(t.Elem())
		d.decode(n, e.Elem(), key)
		v.Set(e)
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.failAt(key, n.Line, fmt.Errorf("want a mapping, got %s", describe(n)))
			return
		}
		d.decodeStruct(n, v, key)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.failAt(key, n.Line, fmt.Errorf("want a list, got %s", describe(n)))
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			path := key + "[" + strconv.Itoa(i) + "]"
			d.lines[path] = item.Line
			d.decode(item, s.Index(i), path)
		}
		v.Set(s)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		if n.Kind != yaml.MappingNode {
			d.failAt(key, n.Line, fmt.Errorf("want a mapping, got %s", describe(n)))
			return
		}
		m := reflect.MakeMap(t)
		d.decodeMap(n, m, key)
		v.Set(m)
	default:
		panic("config: cannot decode into " + t.String()) // a type added to Config without support here
	}
}

// isScalarKind reports whether values of kind k decode from one YAML scalar.
func isScalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// field is a settable struct field reachable from a YAML key.
type field struct {
	name  string
	index []int
}

// fieldCache holds fieldsOf's answer per type: a file with 100,000
// endpoints decodes the same few structs hundreds of thousands of times.
var fieldCache sync.Map // reflect.Type → []field

// fieldsOf lists the YAML keys of struct type t, descending into ",inline"
// fields. Fields without a yaml tag or tagged "-" are not keys. The slice
// is shared: callers do not change it.
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	fs := listFields(t)
	fieldCache.Store(t, fs)
	return fs
}

func listFields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("yaml")
		if !ok || tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts == "inline" {
			for _, sub := range fieldsOf(f.Type) {
				out = append(out, field{name: sub.name, index: append([]int{i}, sub.index...)})
			}
			continue
		}
		out = append(out, field{name: name, index: []int{i}})
	}
	return out
}

// mappingPairs calls fn for every key/value pair of mapping n, first those
// merged in with "<<" (the earlier of several merged mappings winning), then
// n's own pairs, so that explicit keys take precedence. It reports duplicate
// and non-scalar keys.
func (d *decoder) mappingPairs(n *yaml.Node, key string, fn func(k, v *yaml.Node)) {
	var own [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == tagMerge {
			d.merge(v, key, fn)
			continue
		}
		own = append(own, [2]*yaml.Node{k, v})
	}
	seen := make(map[string]int, len(own))
	for _, p := range own {
		k, v := p[0], p[1]
		if !d.spend(key, k.Line) {
			return
		}
		if k.Kind != yaml.ScalarNode {
			d.failAt(key, k.Line, fmt.Errorf("keys must be scalars, got %s", describe(k)))
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.failAt(child(key, k.Value), k.Line, fmt.Errorf("duplicate key, first set on line %d", line))
			continue
		}
		seen[k.Value] = k.Line
		fn(k, v)
	}
}

// merge applies the value of a "<<" key: a mapping, an alias of one, or a list
// of them.
func (d *decoder) merge(v *yaml.Node, key string, fn func(k, v *yaml.Node)) {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		d.mergeMapping(v, key, fn)
	case yaml.SequenceNode:
		for i := len(v.Content) - 1; i >= 0; i-- {
			m := v.Content[i]
			if m.Kind == yaml.AliasNode && m.Alias != nil {
				m = m.Alias
			}
			if m.Kind != yaml.MappingNode {
				d.failAt(key, m.Line, errors.New("<< merges only mappings"))
				continue
			}
			d.mergeMapping(m, key, fn)
		}
	default:
		d.failAt(key, v.Line, errors.New("<< merges only mappings"))
	}
}

// mergeMapping applies the pairs of mapping m merged into key, refusing a
// mapping that merges itself.
func (d *decoder) mergeMapping(m *yaml.Node, key string, fn func(k, v *yaml.Node)) {
	if slices.Contains(d.merging, m) {
		d.failAt(key, m.Line, errors.New("<< merges a mapping into itself"))
		return
	}
	d.merging = append(d.merging, m)
	d.mappingPairs(m, key, fn)
	d.merging = d.merging[:len(d.merging)-1]
}

// decodeStruct decodes mapping n onto struct v.
func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, key string) {
	fields := fieldsOf(v.Type())
	d.mappingPairs(n, key, func(k, val *yaml.Node) {
		path := child(key, k.Value)
		d.lines[path] = k.Line
		for _, f := range fields {
			if f.name == k.Value {
				d.decode(val, v.FieldByIndex(f.index), path)
				return
			}
		}
		msg := "unknown key"
		if s := suggest(k.Value, fields); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		d.failAt(path, k.Line, errors.New(msg))
	})
}

// decodeMap decodes mapping n into the empty map m.
func (d *decoder) decodeMap(n *yaml.Node, m reflect.Value, key string) {
	et := m.Type().Elem()
	d.mappingPairs(n, key, func(k, val *yaml.Node) {
		path := child(key, k.Value)
		d.lines[path] = k.Line
		e := reflect.New(et).Elem()
		d.decode(val, e, path)
		m.SetMapIndex(reflect.ValueOf(k.Value).Convert(m.Type().Key()), e)
	})
}

// suggest returns the known key closest to an unknown one, if close enough
// to be a typo.
func suggest(name string, fields []field) string {
	best, bestDist := "", 3
	for _, f := range fields {
		if dist := editDistance(name, f.name); dist < bestDist {
			best, bestDist = f.name, dist
		}
	}
	return best
}

// Closest returns the name of names nearest to word (an edit distance
// of at most 2), or "" when none is near: the "did you mean" of config keys,
// for command names too.
func Closest(word string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if dist := editDistance(word, n); dist < bestDist {
			best, bestDist = n, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// setScalar parses s into v. tag is the YAML tag of the scalar, or "" when s
// comes from an environment variable.
func (d *decoder) setScalar(v reflect.Value, s, tag string) error {
	t := v.Type()
	switch t {
	case secretType:
		sec, err := resolveSecret(s, d.getenv, d.readFile)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(sec))
	case durationType:
		dur, err := parseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(dur))
	default:
		switch t.Kind() {
		case reflect.String:
			v.SetString(s)
		case reflect.Bool:
			if tag != "" && tag != tagBool {
				return errors.New("want true or false")
			}
			// YAML writes true, True or TRUE; the environment also 1, t, ...
			b, err := strconv.ParseBool(strings.ToLower(s))
			if err != nil {
				return errors.New("want true or false")
			}
			v.SetBool(b)
		case reflect.Int64:
			// Byte sizes: a plain integer, or one with a unit such as
			// 512MiB, 8GiB, 64KB.
			n, err := parseSize(s, tag)
			if err != nil {
				return err
			}
			v.SetInt(n)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32:
			base := 10
			if tag != "" {
				if tag != tagInt {
					return errors.New("want an integer")
				}
				base = 0 // YAML integers may be written 0x1F, 0o17, 1_000
			}
			i, err := strconv.ParseInt(s, base, t.Bits())
			if errors.Is(err, strconv.ErrRange) {
				return errors.New("integer out of range")
			} else if err != nil {
				return errors.New("want an integer")
			}
			v.SetInt(i)
		case reflect.Float32, reflect.Float64:
			if tag != "" && tag != tagInt && tag != tagFloat {
				return errors.New("want a number")
			}
			f, err := strconv.ParseFloat(s, t.Bits())
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return errors.New("want a finite number")
			}
			v.SetFloat(f)
		case reflect.Slice: // []string from an environment variable
			var items []string
			for item := range strings.SplitSeq(s, ",") {
				if item = strings.TrimSpace(item); item != "" {
					items = append(items, item)
				}
			}
			v.Set(reflect.ValueOf(items).Convert(t))
		default:
			panic("config: cannot parse into " + t.String())
		}
	}
	return nil
}

// sizeUnits are the byte-size suffixes parseSize accepts, longest first.
var sizeUnits = []struct {
	suffix string
	n      int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// parseSize parses a byte size: an integer (YAML forms included when tag
// is set) or a non-negative integer with a unit (KiB, MiB, GiB, TiB, KB,
// MB, GB, TB, B).
func parseSize(s, tag string) (int64, error) {
	for _, u := range sizeUnits {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil || n < 0 {
			return 0, errors.New("want a byte size such as 8GiB or 536870912")
		}
		if n > math.MaxInt64/u.n {
			return 0, errors.New("byte size out of range")
		}
		return n * u.n, nil
	}
	base := 10
	if tag != "" {
		if tag != tagInt && tag != "!!str" {
			return 0, errors.New("want an integer")
		}
		base = 0
	}
	i, err := strconv.ParseInt(s, base, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, errors.New("integer out of range")
	} else if err != nil {
		return 0, errors.New("want an integer or a byte size such as 8GiB")
	}
	return i, nil
}

// parseDuration parses a Go duration that carries a unit and is not negative.
func parseDuration(s string) (time.Duration, error) {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("%q has no unit: use a unit, e.g. 5s", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: use e.g. 500ms, 5s, 2m or 1h30m", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// endpoints decodes the endpoints list; each endpoint starts from a copy of
// defaults and subscribes to every event unless it says otherwise.
func (d *decoder) endpoints(defaults Settings) []Endpoint {
	n := d.epNode
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.failAt("endpoints", n.Line, fmt.Errorf("want a list, got %s", describe(n)))
		return nil
	}
	eps := make([]Endpoint, len(n.Content))
	for i, item := range n.Content {
		path := "endpoints[" + strconv.Itoa(i) + "]"
		d.lines[path] = item.Line
		eps[i] = Endpoint{Events: []string{">"}, Source: SourceConfig, Settings: defaults}
		d.decode(item, reflect.ValueOf(&eps[i]).Elem(), path)
	}
	return eps
}

// normalize fills derived values: the default burst of rate limits and the
// minimal set of event patterns of each endpoint.
func normalize(c *Config) {
	c.Defaults.RateLimit = c.Defaults.RateLimit.normalized()
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		e.RateLimit = e.RateLimit.normalized()
		e.Events = normalizeEvents(e.Events)
	}
}

// normalized returns r with a zero Burst replaced by max(1, ceil(RPS)) when
// RPS is positive.
func (r RateLimit) normalized() RateLimit {
	if r.RPS > 0 && r.Burst == 0 && r.RPS < math.MaxInt32 {
		r.Burst = max(1, int(math.Ceil(r.RPS)))
	}
	return r
}

// decodeJSON decodes any YAML value onto v (a [JSON]) as its JSON form.
func (d *decoder) decodeJSON(n *yaml.Node, v reflect.Value, key string) {
	var x any
	if err := n.Decode(&x); err != nil {
		d.failAt(key, n.Line, err)
		return
	}
	b, err := json.Marshal(x)
	if err != nil {
		d.failAt(key, n.Line, fmt.Errorf("not a JSON value: %w", err))
		return
	}
	v.SetBytes(b)
}
