package routing

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hookjet/hookjet/config"
)

// engine is the smallest Runtime that does what the delivery engine does
// with the table's changes: it keeps the definition in force per id,
// refuses one whose secret does not decode (as dispatch's settings do), and
// records each call in order.
type engine struct {
	mu    sync.Mutex
	eps   map[string]config.Endpoint
	calls []string // "install id url" or "uninstall id deleted"
	// table, when set, is read from inside Install: Runtime may read the
	// table.
	table *Table
}

func newEngine() *engine { return &engine{eps: map[string]config.Endpoint{}} }

func (e *engine) Install(ep *config.Endpoint) error {
	for _, s := range ep.Secrets {
		if _, err := config.DecodeSecret(s.Reveal()); err != nil {
			return fmt.Errorf("endpoints %s: secret: %w", ep.ID, err)
		}
	}
	if e.table != nil {
		_, _ = e.table.Get(ep.ID)
		_ = e.table.Match(ep.Tenant, "x", nil)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.eps[ep.ID] = *ep
	e.calls = append(e.calls, "install "+ep.ID+" "+ep.URL)
	return nil
}

func (e *engine) Uninstall(id string, deleted bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.eps, id)
	e.calls = append(e.calls, fmt.Sprintf("uninstall %s %v", id, deleted))
}

// took returns the calls since the last took.
func (e *engine) took() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.calls
	e.calls = nil
	return c
}

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func ep(id, url string, events ...string) config.Endpoint {
	if len(events) == 0 {
		events = []string{">"}
	}
	return config.Endpoint{
		ID: id, URL: url, Events: events, Secrets: []config.Secret{config.NewSecret(secret)},
		Settings: config.Default().Defaults,
	}
}

func tenantEP(id, tenant string, events ...string) config.Endpoint {
	e := ep(id, "https://"+id+".example/hook", events...)
	e.Tenant = tenant
	return e
}

func ids(eps []config.Endpoint) []string {
	out := make([]string, 0, len(eps))
	for _, e := range eps {
		out = append(out, e.ID)
	}
	slices.Sort(out)
	return out
}

func matched(tb testing.TB, x *Table, tenant, typ string) []string {
	tb.Helper()
	got := x.Match(tenant, typ, nil)
	slices.Sort(got)
	return got
}

func wantCalls(t *testing.T, e *engine, want ...string) {
	t.Helper()
	got := e.took()
	if !slices.Equal(got, want) {
		t.Fatalf("runtime calls = %q, want %q", got, want)
	}
}

func source(t *testing.T, x *Table, id string) string {
	t.Helper()
	got, ok := x.Get(id)
	if !ok {
		t.Fatalf("%s is not in force", id)
	}
	return got.Source + " " + got.URL
}

// The config file's endpoints are added, changed and removed by a reload:
// only what changed reaches the runtime, and the table routes by the new
// definitions at once.
func TestApplyConfigAddsChangesRemoves(t *testing.T) {
	e := newEngine()
	x := New(e, nil)
	changed, gone, err := x.ApplyConfig([]config.Endpoint{ep("a", "https://a/1", "order.*"), ep("b", "https://b/1")})
	if err != nil || !slices.Equal(ids(changed), []string{"a", "b"}) || len(gone) != 0 {
		t.Fatalf("first apply: changed %v gone %v err %v", ids(changed), gone, err)
	}
	wantCalls(t, e, "install a https://a/1", "install b https://b/1")
	if got := matched(t, x, "", "order.created"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("order.created matched %v", got)
	}
	if s := source(t, x, "a"); s != "config https://a/1" {
		t.Fatalf("a is %q, want config https://a/1", s)
	}

	// The same file again: nothing changes.
	changed, gone, err = x.ApplyConfig([]config.Endpoint{ep("a", "https://a/1", "order.*"), ep("b", "https://b/1")})
	if err != nil || len(changed) != 0 || len(gone) != 0 {
		t.Fatalf("same file: changed %v gone %v err %v", ids(changed), gone, err)
	}
	wantCalls(t, e)

	// a moves to invoices, b goes, c comes.
	changed, gone, err = x.ApplyConfig([]config.Endpoint{ep("a", "https://a/2", "invoice.*"), ep("c", "https://c/1")})
	if err != nil || !slices.Equal(ids(changed), []string{"a", "c"}) || !slices.Equal(gone, []string{"b"}) {
		t.Fatalf("reload: changed %v gone %v err %v", ids(changed), gone, err)
	}
	wantCalls(t, e, "install a https://a/2", "install c https://c/1", "uninstall b false")
	if got := matched(t, x, "", "order.created"); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("after the reload order.created matched %v, want [c]", got)
	}
	if got := matched(t, x, "", "invoice.paid"); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("after the reload invoice.paid matched %v, want [a c]", got)
	}
	if _, ok := x.Get("b"); ok {
		t.Fatal("b is still in force after the file dropped it")
	}
	if got := x.IDs(); !slices.Equal(got, []string{"a", "c"}) || x.Len() != 2 {
		t.Fatalf("IDs %v Len %d", got, x.Len())
	}
	if !x.OwnsConfig("a") || x.OwnsConfig("b") {
		t.Fatal("OwnsConfig does not follow the file")
	}
	if got := ids(x.ConfigEndpoints()); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("ConfigEndpoints %v", got)
	}
}

// An endpoint whose settings the runtime refuses (a secret that does not
// decode) is left out with an error naming it; the others of the file go
// in, and an endpoint in force keeps its old definition.
func TestApplyConfigRefusedEndpointKeepsItsOldDefinition(t *testing.T) {
	e := newEngine()
	x := New(e, nil)
	if _, _, err := x.ApplyConfig([]config.Endpoint{ep("a", "https://a/1", "order.*")}); err != nil {
		t.Fatal(err)
	}
	e.took()
	bad := ep("a", "https://a/2", "invoice.*")
	bad.Secrets = []config.Secret{config.NewSecret("whsec_!!!not-base64")}
	bad2 := bad
	bad2.ID = "new"
	changed, _, err := x.ApplyConfig([]config.Endpoint{bad, bad2, ep("b", "https://b/1")})
	if err == nil || !errContains(err, "endpoints a: secret") || !errContains(err, "endpoints new: secret") {
		t.Fatalf("err = %v, want both refused endpoints named", err)
	}
	if !slices.Equal(ids(changed), []string{"b"}) {
		t.Fatalf("changed %v, want [b]", ids(changed))
	}
	wantCalls(t, e, "install b https://b/1")
	if s := source(t, x, "a"); s != "config https://a/1" {
		t.Fatalf("a is %q after a refused change, want its old definition", s)
	}
	if got := matched(t, x, "", "order.created"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("order.created matched %v: a must keep its old patterns", got)
	}
	if got := matched(t, x, "", "invoice.paid"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("invoice.paid matched %v: the refused patterns are not in force", got)
	}
	if _, ok := x.Get("new"); ok {
		t.Fatal("a refused new endpoint is in force")
	}
}

func errContains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// The file wins over the admin API for an id both define: the API's is
// kept shadowed and comes back when the file drops the id, whichever came
// first.
func TestConfigFileShadowsAPIEndpoint(t *testing.T) {
	e := newEngine()
	x := New(e, nil)

	// The API's first, then the file takes the id over.
	if changed, err := x.PutAPI(ep("dup", "https://api/1")); err != nil || !changed {
		t.Fatalf("PutAPI: changed %v err %v", changed, err)
	}
	if s := source(t, x, "dup"); s != "api https://api/1" {
		t.Fatalf("dup is %q", s)
	}
	if _, ok := x.Config("dup"); ok {
		t.Fatal("Config answers for an API endpoint")
	}
	if _, _, err := x.ApplyConfig([]config.Endpoint{ep("dup", "https://file/1")}); err != nil {
		t.Fatal(err)
	}
	if s := source(t, x, "dup"); s != "config https://file/1" {
		t.Fatalf("after the file took the id: %q", s)
	}
	if got, ok := x.Config("dup"); !ok || got.URL != "https://file/1" {
		t.Fatalf("Config(dup) = %v %v", got.URL, ok)
	}

	// The API changes it while the file owns it: refused, kept shadowed.
	_, err := x.PutAPI(ep("dup", "https://api/2"))
	if !errors.Is(err, ErrConfigOwned) || !strings.Contains(err.Error(), `endpoint "dup" is defined in the config file`) {
		t.Fatalf("PutAPI of a file's id: %v", err)
	}
	if s := source(t, x, "dup"); s != "config https://file/1" {
		t.Fatalf("the API changed the file's endpoint: %q", s)
	}
	e.took()

	// The file drops the id: the API's latest definition is back.
	changed, gone, err := x.ApplyConfig(nil)
	if err != nil || !slices.Equal(gone, []string{"dup"}) || !slices.Equal(ids(changed), []string{"dup"}) {
		t.Fatalf("drop: changed %v gone %v err %v", ids(changed), gone, err)
	}
	wantCalls(t, e, "install dup https://api/2")
	if s := source(t, x, "dup"); s != "api https://api/2" {
		t.Fatalf("after the file dropped the id: %q, want the API's back", s)
	}

	// Deleted through the API while shadowed: the file's drop removes it.
	if _, _, err := x.ApplyConfig([]config.Endpoint{ep("dup", "https://file/1")}); err != nil {
		t.Fatal(err)
	}
	x.RemoveAPI("dup")
	if s := source(t, x, "dup"); s != "config https://file/1" {
		t.Fatalf("RemoveAPI removed the file's endpoint: %q", s)
	}
	e.took()
	if _, _, err := x.ApplyConfig(nil); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, e, "uninstall dup false")
	if _, ok := x.Get("dup"); ok {
		t.Fatal("an API endpoint deleted while shadowed came back")
	}
}

// PutAPIAll (the API's endpoints at start, or after a change of the
// defaults) leaves the file's ids to the file, skips what the runtime
// refuses, and reports only what changed.
func TestPutAPIAll(t *testing.T) {
	e := newEngine()
	x := New(e, nil)
	if _, _, err := x.ApplyConfig([]config.Endpoint{ep("file", "https://file/1")}); err != nil {
		t.Fatal(err)
	}
	bad := ep("bad", "https://bad/1")
	bad.Secrets = []config.Secret{config.NewSecret("not-a-secret")}
	changed := x.PutAPIAll([]config.Endpoint{ep("file", "https://api/1"), ep("x", "https://x/1"), bad, ep("y", "https://y/1")})
	if !slices.Equal(ids(changed), []string{"x", "y"}) {
		t.Fatalf("changed %v, want [x y]", ids(changed))
	}
	for _, c := range changed {
		if c.Source != config.SourceAPI {
			t.Fatalf("%s reported with source %q", c.ID, c.Source)
		}
	}
	if s := source(t, x, "file"); s != "config https://file/1" {
		t.Fatalf("file is %q", s)
	}
	if _, ok := x.Get("bad"); ok {
		t.Fatal("a refused API endpoint is in force")
	}
	if changed := x.PutAPIAll([]config.Endpoint{ep("x", "https://x/1"), ep("y", "https://y/2")}); !slices.Equal(ids(changed), []string{"y"}) {
		t.Fatalf("second batch changed %v, want [y]", ids(changed))
	}
	// The shadowed API definition from the batch comes back when the file
	// drops the id.
	if _, _, err := x.ApplyConfig(nil); err != nil {
		t.Fatal(err)
	}
	if s := source(t, x, "file"); s != "api https://api/1" {
		t.Fatalf("file after the drop: %q", s)
	}
}

// RemoveAPI takes an API endpoint out for good (deleted for every process)
// and leaves a file's endpoint of the same id.
func TestRemoveAPI(t *testing.T) {
	e := newEngine()
	x := New(e, nil)
	if _, err := x.PutAPI(tenantEP("crm", "acme", "order.*")); err != nil {
		t.Fatal(err)
	}
	if got := matched(t, x, "acme", "order.created"); !slices.Equal(got, []string{"crm"}) {
		t.Fatalf("matched %v", got)
	}
	e.took()
	x.RemoveAPI("crm")
	wantCalls(t, e, "uninstall crm true")
	if got := matched(t, x, "acme", "order.created"); len(got) != 0 {
		t.Fatalf("a removed endpoint still matches: %v", got)
	}
	x.RemoveAPI("crm") // twice, or unknown: nothing
	x.RemoveAPI("never")
	wantCalls(t, e)
	if _, _, err := x.ApplyConfig([]config.Endpoint{ep("file", "https://file/1")}); err != nil {
		t.Fatal(err)
	}
	e.took()
	x.RemoveAPI("file")
	wantCalls(t, e)
	if _, ok := x.Get("file"); !ok {
		t.Fatal("RemoveAPI removed a config-file endpoint")
	}
}

// Another process's config endpoints: applied unless this process's file
// or API defines the id; their deletion removes only what they put in.
func TestPutShared(t *testing.T) {
	e := newEngine()
	x := New(e, nil)
	if _, _, err := x.ApplyConfig([]config.Endpoint{ep("mine", "https://mine/1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.PutAPI(ep("api", "https://api/1")); err != nil {
		t.Fatal(err)
	}
	e.took()

	other := ep("other", "https://other/1", "order.*")
	other.Source = config.SourceAPI // how it arrives does not matter: it is a config endpoint
	if changed, err := x.PutShared("other", &other); err != nil || !changed {
		t.Fatalf("PutShared(other): changed %v err %v", changed, err)
	}
	if s := source(t, x, "other"); s != "config https://other/1" {
		t.Fatalf("other is %q", s)
	}
	if _, ok := x.Config("other"); ok || x.OwnsConfig("other") {
		t.Fatal("another process's config endpoint counts as this file's")
	}
	if changed, err := x.PutShared("other", &other); err != nil || changed {
		t.Fatalf("the same again: changed %v err %v", changed, err)
	}

	mine := ep("mine", "https://elsewhere/1")
	if changed, err := x.PutShared("mine", &mine); err != nil || changed {
		t.Fatalf("PutShared of this file's id: changed %v err %v", changed, err)
	}
	if s := source(t, x, "mine"); s != "config https://mine/1" {
		t.Fatalf("another file changed this file's endpoint: %q", s)
	}
	api := ep("api", "https://elsewhere/2")
	if _, err := x.PutShared("api", &api); !errors.Is(err, ErrAPIOwned) {
		t.Fatalf("PutShared of this API's id: err %v, want ErrAPIOwned", err)
	}
	if s := source(t, x, "api"); s != "api https://api/1" {
		t.Fatalf("another file changed this API's endpoint: %q", s)
	}
	wantCalls(t, e, "install other https://other/1")

	// Deletes: of this file's or this API's ids, nothing; of a shared one,
	// it goes.
	for _, id := range []string{"mine", "api", "unknown"} {
		if _, err := x.PutShared(id, nil); err != nil {
			t.Fatal(err)
		}
	}
	wantCalls(t, e)
	if _, err := x.PutShared("other", nil); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, e, "uninstall other false")
	if got := matched(t, x, "", "order.created"); !slices.Equal(got, []string{"api", "mine"}) {
		t.Fatalf("after the shared delete matched %v", got)
	}
}

// When this process's file comes to define an id another process shared,
// the file's definition rules and a later shared delete leaves it; the
// initial batch skips this file's ids.
func TestSharedEndpointTakenOverByTheFile(t *testing.T) {
	e := newEngine()
	x := New(e, nil)
	changed := x.PutSharedAll([]config.Endpoint{ep("s1", "https://s1/1"), ep("s2", "https://s2/1")})
	if !slices.Equal(ids(changed), []string{"s1", "s2"}) {
		t.Fatalf("initial shared: %v", ids(changed))
	}
	if _, _, err := x.ApplyConfig([]config.Endpoint{ep("s1", "https://mine/1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.PutShared("s1", nil); err != nil {
		t.Fatal(err)
	}
	if s := source(t, x, "s1"); s != "config https://mine/1" {
		t.Fatalf("another process's delete removed this file's endpoint: %q", s)
	}
	if changed := x.PutSharedAll([]config.Endpoint{ep("s1", "https://s1/2"), ep("s3", "https://s3/1")}); !slices.Equal(ids(changed), []string{"s3"}) {
		t.Fatalf("second batch changed %v, want [s3]", ids(changed))
	}
	if s := source(t, x, "s1"); s != "config https://mine/1" {
		t.Fatalf("the shared batch changed this file's endpoint: %q", s)
	}
	// Dropped from the file, it goes even though another process had it:
	// that process's watch brings it back when it stores it again.
	if _, gone, err := x.ApplyConfig(nil); err != nil || !slices.Equal(gone, []string{"s1"}) {
		t.Fatalf("gone %v err %v", gone, err)
	}
	if _, ok := x.Get("s1"); ok {
		t.Fatal("s1 is in force after the file dropped it")
	}
}

// Tenants route through the table: a tenant's endpoint gets only its
// tenant's events; moving it to another tenant moves its routing.
func TestTableMatchesTenantsAcrossChanges(t *testing.T) {
	e := newEngine()
	x := New(e, nil)
	if _, _, err := x.ApplyConfig([]config.Endpoint{ep("ops", "https://ops/1"), tenantEP("acme-crm", "acme", "order.*")}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.PutAPI(tenantEP("globex-crm", "globex", "order.*")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tenant, typ string
		want        []string
	}{
		{"acme", "order.created", []string{"acme-crm", "ops"}},
		{"globex", "order.created", []string{"globex-crm", "ops"}},
		{"", "order.created", []string{"ops"}},
		{"initech", "order.created", []string{"ops"}},
	} {
		if got := matched(t, x, tt.tenant, tt.typ); !slices.Equal(got, tt.want) {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.tenant, tt.typ, got, tt.want)
		}
	}
	if _, err := x.PutAPI(tenantEP("globex-crm", "acme", "order.*")); err != nil {
		t.Fatal(err)
	}
	if got := matched(t, x, "globex", "order.created"); !slices.Equal(got, []string{"ops"}) {
		t.Fatalf("after the move globex's event matched %v", got)
	}
	if got := matched(t, x, "acme", "order.created"); !slices.Equal(got, []string{"acme-crm", "globex-crm", "ops"}) {
		t.Fatalf("after the move acme's event matched %v", got)
	}
}

// Get and Config hand out copies: changing one changes nothing in force.
func TestGetReturnsACopy(t *testing.T) {
	x := New(newEngine(), nil)
	if _, _, err := x.ApplyConfig([]config.Endpoint{ep("a", "https://a/1")}); err != nil {
		t.Fatal(err)
	}
	got, _ := x.Get("a")
	got.URL = "https://changed"
	cfg, _ := x.Config("a")
	cfg.Tenant = "acme"
	if s := source(t, x, "a"); s != "config https://a/1" {
		t.Fatalf("a is %q after changing copies", s)
	}
	if m := matched(t, x, "", "x"); !slices.Equal(m, []string{"a"}) {
		t.Fatalf("matched %v", m)
	}
}

// The runtime may read the table from inside its calls, and readers run
// while changes are applied (go test -race checks the locking).
func TestTableConcurrentReadsAndChanges(t *testing.T) {
	e := newEngine()
	x := New(e, nil)
	e.table = x
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, id := range x.Match("acme", "order.created", nil) {
					_, _ = x.Get(id)
				}
				_ = x.IDs()
				_ = x.ConfigEndpoints()
			}
		}()
	}
	for i := range 200 {
		var file []config.Endpoint
		for j := range i % 7 {
			file = append(file, tenantEP(fmt.Sprintf("f%d", j), "acme", "order.*"))
		}
		if _, _, err := x.ApplyConfig(file); err != nil {
			t.Error(err)
		}
		if _, err := x.PutAPI(tenantEP(fmt.Sprintf("a%d", i%5), "acme", "order.created")); err != nil {
			t.Error(err)
		}
		x.RemoveAPI(fmt.Sprintf("a%d", (i+2)%5))
		shared := ep(fmt.Sprintf("s%d", i%3), "https://s/1")
		if _, err := x.PutShared(shared.ID, &shared); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	readers.Wait()
	// What the runtime holds is exactly what the table has in force.
	e.mu.Lock()
	defer e.mu.Unlock()
	held := make([]string, 0, len(e.eps))
	for id := range e.eps {
		held = append(held, id)
	}
	slices.Sort(held)
	if got := x.IDs(); !slices.Equal(got, held) {
		t.Fatalf("table %v, runtime %v", got, held)
	}
}
