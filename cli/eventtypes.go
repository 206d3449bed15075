package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/client"
)

const eventTypesHelp = `hookjet event-types list [--json]
hookjet event-types show NAME [--json]
hookjet event-types create NAME [--description D] [--schema JSON|@file] [--example JSON|@file ...] [--deprecated]
hookjet event-types update NAME [--description D] [--schema JSON|@file|null] [--example JSON|@file ...] [--deprecated=true|false]
hookjet event-types delete NAME

The event-type catalogue (admin API /api/v1/event-types): each type's
description, JSON Schema (2020-12) and example payloads. With
catalog.validate enforce, hookjet publish and POST /api/v1/events refuse a
payload that fails its type's schema (422 naming each JSON pointer) and a
plain JetStream publish of one is dead-lettered as invalid; with warn it is
delivered and counted in hookjet_invalid_events_total; catalog.strict
refuses types not in the catalogue. Types from the config file (source config) and hookjet's own
(builtin, hookjet.*) are read-only here. A schema that does not compile or an
example that fails it is refused naming the field (schema, examples[i]).
update replaces what its flags give: --example replaces every example.`

func runEventTypes(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			fmt.Fprintln(stderr, eventTypesHelp)
			return usagef("event-types: want list, show, create, update or delete")
		}
		fmt.Fprintln(stdout, eventTypesHelp)
		return errHelp
	}
	sub, rest := args[0], args[1:]
	fs := newFlags("event-types "+sub, eventTypesHelp, stdout)
	newClient := adminFlags(fs, getenv)
	switch sub {
	case "list", "show":
		asJSON := fs.Bool("json", false, "print the API's JSON")
		most := 0
		if sub == "show" {
			most = 1
		}
		pos, err := parseArgs(fs, rest, most)
		if err != nil {
			return err
		}
		if sub == "show" && len(pos) == 0 {
			return usagef("event-types show: want a NAME")
		}
		c, err := newClient()
		if err != nil {
			return err
		}
		if sub == "list" {
			return listEventTypes(ctx, c, *asJSON, stdout)
		}
		return showEventType(ctx, c, pos[0], *asJSON, stdout)
	case "create", "update":
		return writeEventType(ctx, sub, fs, newClient, rest, stdout)
	case "delete":
		pos, err := parseArgs(fs, rest, 1)
		if err != nil {
			return err
		}
		if len(pos) == 0 {
			return usagef("event-types delete: want a NAME")
		}
		c, err := newClient()
		if err != nil {
			return err
		}
		if err := c.answer(c.api.DeleteEventType(ctx, pos[0])); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "event type %s deleted\n", pos[0])
		return nil
	}
	return usagef("event-types: unknown command %q (want list, show, create, update or delete)", sub)
}

func listEventTypes(ctx context.Context, c *adminClient, asJSON bool, stdout io.Writer) error {
	var raw json.RawMessage
	l, err := c.api.EventTypes(ctx, client.Raw(&raw))
	if err := c.answer(err); err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, raw)
	}
	fmt.Fprintf(stdout, "validate %s, strict %v\n", l.Validate, l.Strict)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tSCHEMA\tEXAMPLES\tDESCRIPTION")
	for _, t := range l.EventTypes {
		schema := "none"
		if len(t.Schema) > 0 {
			schema = "yes"
		}
		desc := t.Description
		if t.Deprecated {
			desc = "(deprecated) " + desc
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", t.Name, t.Source, schema, len(t.Examples), desc)
	}
	return tw.Flush()
}

func showEventType(ctx context.Context, c *adminClient, name string, asJSON bool, stdout io.Writer) error {
	var raw json.RawMessage
	t, err := c.api.EventType(ctx, name, client.Raw(&raw))
	if err := c.answer(err); err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, raw)
	}
	printEventType(stdout, t)
	return nil
}

func printEventType(w io.Writer, t api.EventType) {
	fmt.Fprintf(w, "name         %s\nsource       %s\ndeprecated   %v\n", t.Name, t.Source, t.Deprecated)
	if t.Description != "" {
		fmt.Fprintf(w, "description  %s\n", t.Description)
	}
	if len(t.Schema) > 0 {
		fmt.Fprintf(w, "schema       %s\n", indentJSON(t.Schema, "             "))
	}
	for i, ex := range t.Examples {
		fmt.Fprintf(w, "example %-4d %s\n", i, indentJSON(ex, "             "))
	}
}

// indentJSON is raw indented, its lines after the first led by prefix.
func indentJSON(raw json.RawMessage, prefix string) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, prefix, "  ")
	return string(b)
}

// jsonArg reads a flag's JSON value, or the file after @.
func jsonArg(fs *flag.FlagSet, name, value string) (json.RawMessage, error) {
	raw := []byte(value)
	if path, ok := strings.CutPrefix(value, "@"); ok {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			return nil, usagef("%s: --%s: %v", fs.Name(), name, err)
		}
	}
	if !json.Valid(raw) {
		return nil, usagef("%s: --%s: not JSON: %.60q", fs.Name(), name, raw)
	}
	return raw, nil
}

func writeEventType(ctx context.Context, sub string, fs *flag.FlagSet, newClient func() (*adminClient, error), args []string, stdout io.Writer) error {
	desc := fs.String("description", "", "what the event means")
	schema := fs.String("schema", "", `the payload's JSON Schema (2020-12) as JSON, or @file; "null" removes it (update)`)
	var examples multiFlag
	fs.Var(&examples, "example", "an example payload as JSON, or @file (repeat for more; each must be valid against the schema)")
	deprecated := fs.Bool("deprecated", false, "mark the type deprecated (update: --deprecated=false clears it)")
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("event-types %s: want a NAME", sub)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var p api.EventTypePatch
	if set["description"] {
		p.Description = desc
	}
	if set["schema"] {
		if p.Schema, err = jsonArg(fs, "schema", *schema); err != nil {
			return err
		}
	}
	if set["example"] {
		exs := []json.RawMessage{}
		for _, e := range examples {
			raw, err := jsonArg(fs, "example", e)
			if err != nil {
				return err
			}
			exs = append(exs, raw)
		}
		p.Examples = &exs
	}
	if set["deprecated"] {
		p.Deprecated = deprecated
	}
	c, err := newClient()
	if err != nil {
		return err
	}
	var t api.EventType
	if sub == "create" {
		in := api.EventType{Name: pos[0], Description: *desc, Schema: p.Schema, Deprecated: *deprecated}
		if p.Examples != nil {
			in.Examples = *p.Examples
		}
		t, err = c.api.CreateEventType(ctx, in)
	} else {
		if len(set) == 0 {
			return usagef("event-types update: nothing to change (give --description, --schema, --example or --deprecated)")
		}
		t, err = c.api.UpdateEventType(ctx, pos[0], p)
	}
	if err := c.answer(err); err != nil {
		return err
	}
	verb := map[string]string{"create": "created", "update": "updated"}[sub]
	fmt.Fprintf(stdout, "event type %s %s\n", t.Name, verb)
	return nil
}
