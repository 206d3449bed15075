package catalog

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// FuzzDecodeAgreesWithEncodingJSON checks that decode reads every document
// as the library's own decoder (encoding/json with UseNumber) does, and
// refuses the same ones.
func FuzzDecodeAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,false,null,-1.5e3,"x"],"c":{"d":"\u00e9\n\"q\""}}`,
		` [ 1 , { } , [ ] , "" ] `, `"h\u00e9llo"`, `"héllo"`, `0`, `-0.0e-0`, `{"a":1,"a":2}`,
		`{`, `[1,]`, `nul`, "\"\xff\"", `{"a" : "b" , "c" : [ 1 , 2 ] }`,
		`1.`, `-`, `01`, `1e`, `1e+`, `-0`, `2E-3`, `"\u12"`, `"\u00zz"`, `"\x"`, `{"a":}`, `{"a" 1}`, `{,}`, `[1 2]`, `[,1]`,
		"\"a\tb\"", "\"\t\"", ` `, ``, `1 2`, `{} x`, `truex`, `[true,false,null]`, `{"\ud83d\ude00":1}`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 100) + strings.Repeat("]", 100),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		got, err := decode(b)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decode(%q): error %v, encoding/json: %v", b, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decode(%q) = %#v, encoding/json: %#v", b, got, want)
		}
	})
}
