package routing

import (
	"strings"
	"sync"

	"github.com/hookjet/hookjet/config"
)

// index maps events to the endpoints whose patterns match them. Each
// tenant has a trie of its own over '.'-separated tokens with '*' and '>'
// edges, and so do the endpoints without a tenant (the operator's), so
// matching an event costs two trie walks (its tenant's and the operator's),
// the depth of its type and the number of matches, never the number of
// endpoints or tenants: 100,000 endpoints with one pattern each match as
// fast as ten. Adding or removing an endpoint touches only its own patterns.
// hookjet's own event types (config.IsOperational) are matched only below
// the root's literal "hookjet" edge: patterns that name hookjet. (hookjet.>,
// hookjet.endpoint.*), never > or *.* (config.MatchEvent's rule).
type index struct {
	mu    sync.RWMutex
	roots map[string]*trieNode // tenant ("": endpoints without one) -> its trie
	pats  map[string]indexed   // endpoint id -> its tenant and patterns, for removal
}

type indexed struct {
	tenant   string
	patterns []string
}

type trieNode struct {
	next map[string]*trieNode // literal tokens
	star *trieNode            // '*'
	tail idSet                // endpoints with '>' here
	ends idSet                // endpoints whose pattern ends here
}

func newIndex() *index {
	return &index{roots: map[string]*trieNode{}, pats: map[string]indexed{}}
}

// set replaces the tenant and patterns of endpoint id. An endpoint with a
// tenant is matched only by events of that tenant; one without by every
// event.
func (x *index) set(id, tenant string, patterns []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(id)
	root := x.roots[tenant]
	if root == nil {
		root = &trieNode{}
		x.roots[tenant] = root
	}
	for _, p := range patterns {
		n := root
		toks := strings.Split(p, ".")
		for i, t := range toks {
			if t == ">" && i == len(toks)-1 {
				n.tail.add(id)
				n = nil
				break
			}
			n = n.child(t)
		}
		if n != nil {
			n.ends.add(id)
		}
	}
	x.pats[id] = indexed{tenant: tenant, patterns: patterns}
}

// remove drops endpoint id from the index.
func (x *index) remove(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(id)
}

func (x *index) removeLocked(id string) {
	in, ok := x.pats[id]
	if !ok {
		return
	}
	root := x.roots[in.tenant]
	empty := true
	for _, p := range in.patterns {
		empty = root.prune(strings.Split(p, "."), id)
	}
	if empty && in.tenant != "" {
		delete(x.roots, in.tenant) // a tenant's last endpoint: its trie goes too
	}
	delete(x.pats, id)
}

func (n *trieNode) child(tok string) *trieNode {
	if tok == "*" {
		if n.star == nil {
			n.star = &trieNode{}
		}
		return n.star
	}
	c := n.next[tok]
	if c == nil {
		if n.next == nil {
			n.next = map[string]*trieNode{}
		}
		c = &trieNode{}
		n.next[tok] = c
	}
	return c
}

// prune removes id from the path of toks and reports whether n is now empty.
func (n *trieNode) prune(toks []string, id string) bool {
	switch {
	case len(toks) == 1 && toks[0] == ">":
		n.tail.remove(id)
	case len(toks) == 0:
		n.ends.remove(id)
	case toks[0] == "*":
		if n.star != nil && n.star.prune(toks[1:], id) {
			n.star = nil
		}
	default:
		if c := n.next[toks[0]]; c != nil && c.prune(toks[1:], id) {
			delete(n.next, toks[0])
		}
	}
	return len(n.next) == 0 && n.star == nil && n.tail.len() == 0 && n.ends.len() == 0
}

// match appends to dst the ids of endpoints with a pattern matching
// eventType that may receive an event of tenant ("": none), each once, and
// returns it: the endpoints without a tenant, and those of tenant.
func (x *index) match(tenant, eventType string, dst []string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	start := len(dst)
	if root := x.roots[""]; root != nil {
		dst = root.matchRoot(eventType, dst)
	}
	if tenant != "" {
		if root := x.roots[tenant]; root != nil {
			dst = root.matchRoot(eventType, dst)
		}
	}
	if len(dst)-start > 1 {
		dst = dedupeTail(dst, start)
	}
	return dst
}

// matchRoot is match from a trie's root: hookjet's own types skip the
// root's '>' and '*' edges, so only patterns naming "hookjet" match them.
func (n *trieNode) matchRoot(eventType string, dst []string) []string {
	if !config.IsOperational(eventType) {
		return n.match(eventType, dst)
	}
	tok, after, _ := strings.Cut(eventType, ".")
	if c := n.next[tok]; c != nil {
		dst = c.match(after, dst)
	}
	return dst
}

func (n *trieNode) match(rest string, dst []string) []string {
	if rest == "" {
		return n.ends.appendTo(dst)
	}
	dst = n.tail.appendTo(dst)
	tok, after, more := strings.Cut(rest, ".")
	if tok == "" || (more && after == "") {
		return dst // empty token: matches nothing further
	}
	if c := n.next[tok]; c != nil {
		dst = c.match(after, dst)
	}
	if n.star != nil {
		dst = n.star.match(after, dst)
	}
	return dst
}

// dedupeTail removes repeated ids from dst[start:]: an endpoint with two
// patterns matching one event type is delivered to once.
func dedupeTail(dst []string, start int) []string {
	out := dst[:start]
	for i := start; i < len(dst); i++ {
		dup := false
		for _, s := range out[start:] {
			if s == dst[i] {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, dst[i])
		}
	}
	return out
}
