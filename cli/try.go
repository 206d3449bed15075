package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/client"
)

// codeFlags adds --filter and --transform (text, or @file) to fs; the
// function it returns puts the ones given into an endpoint body.
func codeFlags(fs *flag.FlagSet) func(map[string]any) error {
	filter := fs.String("filter", "", `CEL expression the endpoint's events must satisfy, or @file ("" removes it)`)
	transform := fs.String("transform", "", `JavaScript function handler(webhook), or @file ("" removes it)`)
	return func(in map[string]any) error {
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		for name, v := range map[string]*string{"filter": filter, "transform": transform} {
			if !set[name] {
				continue
			}
			text, err := textOrFile(fs.Name(), name, *v)
			if err != nil {
				return err
			}
			in[name] = text
		}
		return nil
	}
}

// textOrFile returns v, or the content of the file it names after "@".
func textOrFile(cmd, flagName, v string) (string, error) {
	path, ok := strings.CutPrefix(v, "@")
	if !ok {
		return v, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", usagef("%s: --%s: %v", cmd, flagName, err)
	}
	return string(b), nil
}

// headerFlag collects repeated --header K=V.
type headerFlag map[string]string

func (h headerFlag) String() string { return "" }

func (h headerFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	h[k] = val
	return nil
}

// runEndpointTry is "hookjet endpoints try": the filter test, then the
// transform test, of one event.
func runEndpointTry(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newEndpointFlags("try", getenv, stdout)
	eventID := f.String("event-id", "", "a stored event's id")
	typ := f.String("type", "", "an inline event's type")
	data := f.String("data", "", "the inline event's payload as JSON, or @file")
	tenant := f.String("tenant", "", "the inline event's tenant")
	key := f.String("key", "", "the inline event's ordering key")
	headers := headerFlag{}
	f.Var(headers, "header", "a header of the inline event, NAME=VALUE (repeatable)")
	filterText := f.String("filter", "", "a candidate filter instead of the endpoint's, or @file")
	transformText := f.String("transform", "", "a candidate transform instead of the endpoint's, or @file")
	id, err := f.parseWithID(args, true)
	if err != nil {
		return err
	}
	var t api.CodeTest
	switch {
	case *eventID != "" && *typ != "":
		return usagef("endpoints try: give --event-id or --type, not both")
	case *eventID != "":
		t.EventID = *eventID
	case *typ != "":
		ev := &api.TestEvent{Type: *typ, Tenant: *tenant, Key: *key}
		if *data != "" {
			text, err := textOrFile(f.Name(), "data", *data)
			if err != nil {
				return err
			}
			if !json.Valid([]byte(text)) {
				return usagef("endpoints try: --data: want JSON")
			}
			ev.Data = json.RawMessage(text)
		}
		if len(headers) > 0 {
			ev.Headers = headers
		}
		t.Event = ev
	default:
		return usagef("endpoints try: give --event-id or --type")
	}
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	ft, tt := t, t
	if set["filter"] {
		text, err := textOrFile(f.Name(), "filter", *filterText)
		if err != nil {
			return err
		}
		ft.Filter = &text
	}
	if set["transform"] {
		text, err := textOrFile(f.Name(), "transform", *transformText)
		if err != nil {
			return err
		}
		tt.Transform = &text
	}
	var fr api.FilterTestResult
	var tr api.TransformTestResult
	if err := f.call(func(c *client.Client) (err error) {
		if fr, err = c.TestFilter(ctx, id, ft); err != nil {
			return err
		}
		tr, err = c.TestTransform(ctx, id, tt)
		return err
	}); err != nil {
		return err
	}
	if *f.asJSON {
		raw, err := json.Marshal(map[string]any{"filter": fr, "transform": tr})
		if err != nil {
			return err
		}
		return printJSON(stdout, raw)
	}
	switch {
	case fr.Match:
		fmt.Fprintln(stdout, "filter     match")
	case fr.Error != "":
		fmt.Fprintf(stdout, "filter     no match: %s\n", fr.Error)
	default:
		fmt.Fprintln(stdout, "filter     no match: the event would not be delivered")
	}
	switch {
	case tr.Error != "":
		fmt.Fprintf(stdout, "transform  %s\n           (the delivery would be dead-lettered with reason transform)\n", tr.Error)
	case tr.Cancel:
		fmt.Fprintln(stdout, "transform  cancelled: nothing would be sent (one record of class cancelled)")
	case tr.Request != nil:
		fmt.Fprintf(stdout, "url        %s\n", tr.Request.URL)
		for _, name := range slices.Sorted(maps.Keys(tr.Request.Headers)) {
			fmt.Fprintf(stdout, "header     %s: %s\n", name, tr.Request.Headers[name])
		}
		fmt.Fprintf(stdout, "body       %s\n", tr.Request.Body)
	}
	return nil
}
