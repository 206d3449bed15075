package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// staticFiles are the stylesheet and the script, served under
// /console/static/ and /portal/static/.
func staticFiles() http.Handler {
	sub, _ := fs.Sub(staticFS, "static") // a directory of this package
	return http.FileServerFS(sub)
}

// page is what every template gets.
type page struct {
	Title    string
	Area     string // "console" or "portal"
	Base     string // links start with it: /console or /portal/s/<token>
	Static   string // where the stylesheet and script are
	CSRF     string
	Flash    string
	Error    string
	ReadOnly bool
	Open     bool   // console without admin.token
	Tenant   string // portal
	Expires  time.Time
	Refresh  int // seconds after which the page reloads itself; 0: never
	Data     any
	start    time.Time
}

// attemptsView is an attempts table; EventLink, when set, links each
// event id to its page.
type attemptsView struct {
	EventLink string
	Rows      []attempt
}

// deadView is a table of dead letters, like attemptsView.
type deadView struct {
	EventLink string
	Rows      []dlqEntry
}

// templates holds one template set per page, each with the layout.
type templates map[string]*template.Template

var funcs = template.FuncMap{
	"path": url.PathEscape,
	"query": func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				v.Set(kv[i], kv[i+1])
			}
		}
		if len(v) == 0 {
			return ""
		}
		return "?" + v.Encode()
	},
	"ago":  ago,
	"when": when,
	"ms": func(v float64) string {
		switch {
		case v == 0:
			return "–"
		case v < 10:
			return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
		default:
			return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
		}
	},
	"pct":           func(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" },
	"join":          strings.Join,
	"customerState": customerState, // console/customer.go
	"expiresIn":     expiresIn,
	"dur": func(s loose) string {
		if s == "" {
			return "–"
		}
		if n, err := strconv.ParseFloat(string(s), 64); err == nil { // nanoseconds
			return time.Duration(n).String()
		}
		return string(s)
	},
	"list":     func(s ...string) []string { return s },
	"destForm": func(types []string, current string) destForm { return destForm{Types: types, Current: current} },
	"rows":     func(link string, a []attempt) attemptsView { return attemptsView{EventLink: link, Rows: a} },
	"dead":     func(link string, d []dlqEntry) deadView { return deadView{EventLink: link, Rows: d} },
	"deref": func(t *time.Time) time.Time {
		if t == nil {
			return time.Time{}
		}
		return *t
	},
}

func loadTemplates() (templates, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	base := template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html"))
	out := templates{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" || name == "parts" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// ago says how long before now t was ("3m ago"), or "–" for none.
func ago(t any) string {
	var tt time.Time
	switch v := t.(type) {
	case time.Time:
		tt = v
	case *time.Time:
		if v == nil {
			return "–"
		}
		tt = *v
	case string:
		p, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return v
		}
		tt = p
	}
	if tt.IsZero() {
		return "–"
	}
	d := time.Since(tt)
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, " from now"
	}
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s" + suffix
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m" + suffix
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h" + suffix
	default:
		return strconv.Itoa(int(d.Hours()/24)) + "d" + suffix
	}
}

// when is t in RFC 3339 UTC, for the title of a relative time.
func when(t any) string {
	switch v := t.(type) {
	case time.Time:
		if !v.IsZero() {
			return v.UTC().Format(time.RFC3339)
		}
	case *time.Time:
		if v != nil && !v.IsZero() {
			return v.UTC().Format(time.RFC3339)
		}
	case string:
		return v
	}
	return ""
}

// render writes page name with status. The page is rendered into a buffer
// first, so that a template error is a clean 500, and the time spent
// answering goes into a Server-Timing header.
func (c *Console) render(w http.ResponseWriter, status int, name string, p *page) {
	t, ok := c.tmpl[name]
	if !ok {
		http.Error(w, "no page "+name, http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		c.log.Error("console: render", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	if !p.start.IsZero() {
		h.Set("Server-Timing", fmt.Sprintf("app;dur=%.2f", float64(time.Since(p.start).Microseconds())/1000))
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
