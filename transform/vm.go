package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// maxCallStack bounds the script's call depth.
const maxCallStack = 1000

// vm is one goja runtime with the script run in it: it only ever runs that
// one script, for one endpoint.
type vm struct {
	script    *Script
	rt        *goja.Runtime
	handler   goja.Callable
	parse     goja.Callable
	stringify goja.Callable
}

// newVM makes a runtime and runs the script's top level in it, under the
// watchdog, to define handler.
func newVM(s *Script, w *watchdog, lim Limits) (*vm, error) {
	rt := goja.New()
	rt.SetParserOptions(parser.WithDisableSourceMaps)
	rt.SetMaxCallStackSize(maxCallStack)
	v := &vm{script: s, rt: rt}
	err := v.guard(w, lim, nil, func() error {
		_, err := rt.RunProgram(s.prg)
		return err
	})
	if err != nil {
		return nil, err
	}
	h, ok := goja.AssertFunction(rt.Get("handler"))
	if !ok {
		return nil, &Error{Kind: KindInvalid, Message: "defines no function handler(webhook)", Line: 1, Column: 1}
	}
	v.handler = h
	j := rt.Get("JSON").ToObject(rt)
	v.parse, _ = goja.AssertFunction(j.Get("parse"))
	v.stringify, _ = goja.AssertFunction(j.Get("stringify"))
	if v.parse == nil || v.stringify == nil {
		return nil, &Error{Kind: KindInvalid, Message: "JSON was replaced", Line: 1, Column: 1}
	}
	return v, nil
}

// guard runs fn under the watchdog and turns what went wrong into an *Error.
func (v *vm) guard(w *watchdog, lim Limits, done <-chan struct{}, fn func() error) (err error) {
	v.rt.ClearInterrupt()
	r := w.watch(v.rt, lim.Timeout, lim.MaxMemory, done)
	defer func() {
		why, hit := w.unwatch(r)
		if p := recover(); p != nil {
			err = &Error{Kind: KindThrown, Message: fmt.Sprint("panic: ", p)}
		}
		var ie *goja.InterruptedError
		if hit && errors.As(err, &ie) {
			e := v.scriptError(why, ie.Stack(), "")
			switch {
			case why == KindMemory:
				e.Message = fmt.Sprintf("interrupted: the heap grew by more than %d bytes", lim.MaxMemory)
			case r.cancelled:
				e.Message = "interrupted: the delivery was cancelled"
			default:
				e.Message = fmt.Sprintf("interrupted after %s (ran %s)", lim.Timeout, time.Since(r.start).Round(time.Millisecond))
			}
			err = e
		}
	}()
	err = fn()
	if err == nil {
		return nil
	}
	var ex *goja.Exception
	var so *goja.StackOverflowError
	switch {
	case errors.As(err, new(*goja.InterruptedError)):
		return err // the deferred function names it
	case errors.As(err, &so):
		return v.scriptError(KindThrown, so.Stack(), "RangeError: maximum call stack size exceeded")
	case errors.As(err, &ex):
		return v.scriptError(KindThrown, ex.Stack(), ex.Value().String())
	}
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	return &Error{Kind: KindThrown, Message: err.Error()}
}

// scriptError names the innermost frame of the script in stack.
func (v *vm) scriptError(k Kind, stack []goja.StackFrame, msg string) *Error {
	e := &Error{Kind: k, Message: msg}
	for i := range stack {
		if stack[i].SrcName() != scriptName {
			continue
		}
		p := stack[i].Position()
		e.Line, e.Column = p.Line, p.Column
		break
	}
	return e
}

// bad is a KindBadReturn error at the handler's declaration.
func (v *vm) bad(format string, a ...any) *Error {
	return &Error{Kind: KindBadReturn, Message: fmt.Sprintf(format, a...), Line: v.script.line, Column: v.script.column}
}

// call runs handler over in.
func (v *vm) call(w *watchdog, lim Limits, done <-chan struct{}, in Input) (Output, error) {
	var out Output
	err := v.guard(w, lim, done, func() error {
		hook, err := v.webhook(in)
		if err != nil {
			return err
		}
		ret, err := v.handler(goja.Undefined(), hook)
		if err != nil {
			return err
		}
		out, err = v.output(ret, in, lim)
		return err
	})
	return out, err
}

// webhook builds the object handler receives.
func (v *vm) webhook(in Input) (goja.Value, error) {
	rt := v.rt
	var payload goja.Value
	if json.Valid(in.Payload) {
		p, err := v.parse(goja.Undefined(), rt.ToValue(string(in.Payload)))
		if err != nil {
			return nil, err
		}
		payload = p
	} else {
		payload = rt.ToValue(string(in.Payload))
	}
	event := rt.NewObject()
	for k, s := range map[string]string{"id": in.ID, "type": in.Type, "tenant": in.Tenant, "key": in.Key} {
		if err := event.Set(k, s); err != nil {
			return nil, err
		}
	}
	hook := rt.NewObject()
	for _, kv := range []struct {
		k string
		v any
	}{
		{"eventType", in.Type},
		{"event", event},
		{"payload", payload},
		{"url", in.URL},
		{"headers", rt.NewObject()},
		{"cancel", false},
	} {
		if err := hook.Set(kv.k, kv.v); err != nil {
			return nil, err
		}
	}
	return hook, nil
}

// output reads what handler returned.
func (v *vm) output(ret goja.Value, in Input, lim Limits) (Output, error) {
	if ret == nil || goja.IsUndefined(ret) || goja.IsNull(ret) {
		return Output{}, v.bad("handler returned %s: return the webhook object", ret)
	}
	obj, ok := ret.(*goja.Object)
	if !ok || obj.ClassName() != "Object" {
		return Output{}, v.bad("handler returned %s, not the webhook object", ret)
	}
	out := Output{URL: in.URL}
	if c := obj.Get("cancel"); c != nil && !goja.IsUndefined(c) {
		b, ok := c.Export().(bool)
		if !ok {
			return Output{}, v.bad("cancel is %s, not a boolean", c)
		}
		out.Cancel = b
	}
	if out.Cancel {
		return out, nil
	}
	p := obj.Get("payload")
	switch {
	case p == nil || goja.IsUndefined(p):
		return Output{}, v.bad("payload is undefined")
	case isString(p):
		out.Payload = []byte(p.String())
		out.ContentType = in.ContentType
	default:
		s, err := v.stringify(goja.Undefined(), p)
		if err != nil {
			return Output{}, err
		}
		if goja.IsUndefined(s) {
			return Output{}, v.bad("payload cannot be written as JSON")
		}
		out.Payload = []byte(s.String())
		out.ContentType = "application/json"
	}
	if len(out.Payload) > lim.MaxOutputBytes {
		return Output{}, v.bad("payload is %d bytes, more than %d", len(out.Payload), lim.MaxOutputBytes)
	}
	if u := obj.Get("url"); u != nil && !goja.IsUndefined(u) {
		if !isString(u) {
			return Output{}, v.bad("url is %s, not a string", u)
		}
		if s := u.String(); s != in.URL {
			if in.URL == "" {
				return Output{}, v.bad("url cannot be set: the endpoint's destination has none")
			}
			if err := checkURL(s); err != nil {
				return Output{}, v.bad("url %q: %v", s, err)
			}
			out.URL = s
		}
	}
	if h := obj.Get("headers"); h != nil && !goja.IsUndefined(h) && !goja.IsNull(h) {
		ho, ok := h.(*goja.Object)
		if !ok {
			return Output{}, v.bad("headers is %s, not an object", h)
		}
		for _, k := range ho.Keys() {
			val := ho.Get(k)
			if !isString(val) {
				return Output{}, v.bad("header %q is %s, not a string", k, val)
			}
			if err := CheckHeader(k, val.String()); err != nil {
				return Output{}, v.bad("%v", err)
			}
			if out.Headers == nil {
				out.Headers = make(map[string]string)
			}
			out.Headers[k] = val.String()
		}
	}
	return out, nil
}

func isString(v goja.Value) bool {
	_, ok := v.Export().(string)
	return ok
}

// checkURL accepts an absolute http or https URL with a host and no user
// information.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("does not parse")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("must be http or https")
	}
	if u.Host == "" {
		return errors.New("has no host")
	}
	if u.User != nil {
		return errors.New("must not carry user information")
	}
	return nil
}

// CheckHeader refuses a header a transform may not set: a protected name
// (webhook-*, hookjet-*, nats-*, Authorization, Host, Content-Length), a name
// that is not an HTTP token, or a value with a control character.
func CheckHeader(name, value string) error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return fmt.Errorf("header %q is not a valid name", name)
	}
	if Protected(name) {
		return fmt.Errorf("header %q cannot be set", name)
	}
	if strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		return fmt.Errorf("header %q has a control character in its value", name)
	}
	return nil
}

// Protected reports whether a transform may not set the header name.
func Protected(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "host", "content-length":
		return true
	}
	return strings.HasPrefix(n, "webhook-") || strings.HasPrefix(n, "hookjet-") || strings.HasPrefix(n, "nats-")
}

func isTokenChar(r rune) bool {
	if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}
