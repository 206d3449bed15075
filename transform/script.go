package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// MaxScriptBytes bounds a script's source (DESIGN: 64 KiB).
const MaxScriptBytes = 64 << 10

// scriptName is the file name errors and stacks show.
const scriptName = "transform.js"

// Script is a compiled transformation. It is immutable and safe for
// concurrent use; every runtime that runs it runs this one program.
type Script struct {
	src     string
	version string
	prg     *goja.Program
	// line and column of the handler's declaration, for errors about
	// what it returned.
	line, column int
}

// Source returns the script as written.
func (s *Script) Source() string { return s.src }

// Version identifies the script's content: a hash of the source. Runtimes
// are pooled per endpoint and version.
func (s *Script) Version() string { return s.version }

var handlerDecl = regexp.MustCompile(`\bfunction\s+handler\s*\(`)

// Compile parses src and checks that running it defines a function handler
// (running it once, under Limits' defaults). Source maps are never loaded.
// It refuses, with an *Error of KindInvalid, an empty or oversized script, a
// syntax error (with its line:column), and a script that throws, loops or
// does not define handler.
func Compile(src string) (*Script, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &Error{Kind: KindInvalid, Message: "is empty"}
	}
	if len(src) > MaxScriptBytes {
		return nil, &Error{Kind: KindInvalid, Message: fmt.Sprintf("is %d bytes, more than %d", len(src), MaxScriptBytes)}
	}
	ast, err := parser.ParseFile(nil, scriptName, src, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, syntaxError(err)
	}
	prg, err := goja.CompileAST(ast, false)
	if err != nil {
		return nil, syntaxError(err)
	}
	sum := sha256.Sum256([]byte(src))
	s := &Script{src: src, version: hex.EncodeToString(sum[:8]), prg: prg, line: 1, column: 1}
	if loc := handlerDecl.FindStringIndex(src); loc != nil {
		s.line = 1 + strings.Count(src[:loc[0]], "\n")
		s.column = loc[0] - strings.LastIndex(src[:loc[0]], "\n")
	}
	// Define it once, in a runtime of its own, to refuse a script whose top
	// level throws, loops or defines no handler.
	w := newWatchdog()
	defer w.stop()
	v, err := newVM(s, w, Limits{}.withDefaults())
	if err != nil {
		var te *Error
		if errors.As(err, &te) {
			te.Kind = KindInvalid
		}
		return nil, err
	}
	_ = v
	return s, nil
}

// syntaxError turns goja's parse and compile errors into an *Error with the
// position of the first.
func syntaxError(err error) error {
	var list parser.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		p := list[0].Position
		return &Error{Kind: KindInvalid, Message: "SyntaxError: " + list[0].Message, Line: p.Line, Column: p.Column}
	}
	var pe *parser.Error
	if errors.As(err, &pe) {
		return &Error{Kind: KindInvalid, Message: "SyntaxError: " + pe.Message, Line: pe.Position.Line, Column: pe.Position.Column}
	}
	var ce *goja.CompilerSyntaxError
	if errors.As(err, &ce) {
		e := &Error{Kind: KindInvalid, Message: "SyntaxError: " + ce.Message}
		if ce.File != nil {
			p := ce.File.Position(ce.Offset)
			e.Line, e.Column = p.Line, p.Column
		}
		return e
	}
	var re *goja.CompilerReferenceError
	if errors.As(err, &re) {
		e := &Error{Kind: KindInvalid, Message: "ReferenceError: " + re.Message}
		if re.File != nil {
			p := re.File.Position(re.Offset)
			e.Line, e.Column = p.Line, p.Column
		}
		return e
	}
	return &Error{Kind: KindInvalid, Message: err.Error()}
}
