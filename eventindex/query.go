package eventindex

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookjet/hookjet/internal/genstore"
)

// Bounds of one page's work.
const (
	// ScanBudget bounds the keys one page examines: past it the page ends
	// short, with a cursor to go on from.
	ScanBudget = 20000
	// PrefixMax is the most ids with a prefix a generation may hold for
	// the id keys to serve a prefix search there; a broader prefix is
	// checked on the summaries the other keys find.
	PrefixMax = 2048
	// DefaultLimit is a page's size when Query.Limit is 0.
	DefaultLimit = 100
)

// Query selects events for [Index.Page]. Zero fields match everything.
type Query struct {
	Type   string
	Tenant string
	// Prefix selects the events whose id starts with it.
	Prefix string
	// Since and Until select the events published at or after Since and
	// before Until.
	Since, Until time.Time
	// Before is the cursor: only events with a smaller sequence (0: from
	// the newest).
	Before uint64
	// First is the stream's first sequence: events below it are gone and
	// never listed.
	First uint64
	// Limit is the page size; 0 means DefaultLimit.
	Limit int
}

// match reports whether e passes q's filters.
func (q *Query) match(e *Entry) bool {
	return (q.Type == "" || e.Type == q.Type) && (q.Tenant == "" || e.Tenant == q.Tenant) &&
		(q.Prefix == "" || strings.HasPrefix(e.ID, q.Prefix)) &&
		(q.Since.IsZero() || !e.PublishedAt.Before(q.Since)) && (q.Until.IsZero() || e.PublishedAt.Before(q.Until))
}

// Page returns up to q.Limit events matching q, newest first, and the
// cursor of the next page (0 when there is none): the sequence to pass as
// Before. A page examines at most ScanBudget keys; a page cut short by it
// may hold fewer than Limit events, even none, and still have a cursor.
func (x *Index) Page(q Query) ([]Entry, uint64, error) {
	p := pager{q: q, limit: q.Limit}
	if p.limit <= 0 {
		p.limit = DefaultLimit
	}
	hi := uint64(math.MaxUint64)
	if q.Before > 0 {
		hi = q.Before - 1
	}
	lo := max(q.First, 1)
	if lo > hi {
		return nil, 0, nil
	}
	x.mu.RLock()
	mem := make([]memGen, len(x.mem))
	for i, g := range x.mem {
		mem[i] = memGen{num: g.num, entries: g.entries[:len(g.entries):len(g.entries)]}
	}
	x.mu.RUnlock()
	p.inMemory = true
	for i := len(mem) - 1; i >= 0; i-- {
		if p.scanMemory(mem[i].entries, lo, hi) {
			return p.out, p.next, nil
		}
	}
	p.inMemory = false
	below := mem[0].num // generations from it on were answered from memory
	err := x.f.EachGen(true, func(g uint64, b *bolt.Bucket) bool {
		if g >= below || x.f.Start(g) > hi {
			return true
		}
		if x.f.End(g) < lo {
			return false
		}
		return !p.inBucket(b, max(lo, x.f.Start(g)), min(hi, x.f.End(g)))
	})
	if err != nil {
		return nil, 0, err
	}
	return p.out, p.next, nil
}

// pager is one page being filled.
type pager struct {
	q     Query
	limit int
	out   []Entry
	// examined counts the keys read from the file; the summaries held in
	// memory (at most two generations) are not counted: scanning them
	// reads no page.
	examined int
	inMemory bool
	next     uint64
}

// take examines the event at seq (e, when ok is true): it reports true
// when the page is done (full, or out of budget).
func (p *pager) take(seq uint64, e *Entry, ok bool) bool {
	if !p.inMemory {
		p.examined++
	}
	if ok && p.q.match(e) {
		p.out = append(p.out, *e)
		if len(p.out) == p.limit {
			p.next = seq
			return true
		}
	}
	if p.examined >= ScanBudget {
		p.next = seq
		return true
	}
	return false
}

// scanMemory pages through a generation held in memory (entries in sequence
// order) within lo..hi; it reports true when the page is done, or no
// older generation can match (since passed).
func (p *pager) scanMemory(entries []Entry, lo, hi uint64) bool {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Seq >= lo })
	j := sort.Search(len(entries), func(i int) bool { return entries[i].Seq > hi })
	if i >= j {
		return len(entries) > 0 && entries[0].Seq < lo // the rest is below lo
	}
	start := i
	if !p.q.Until.IsZero() {
		j = i + sort.Search(j-i, func(k int) bool { return !entries[i+k].PublishedAt.Before(p.q.Until) })
	}
	if !p.q.Since.IsZero() {
		i += sort.Search(j-i, func(k int) bool { return !entries[i+k].PublishedAt.Before(p.q.Since) })
	}
	for k := j - 1; k >= i; k-- {
		if p.take(entries[k].Seq, &entries[k], true) {
			return true
		}
	}
	// Stop when since cut this generation, or it holds events below lo:
	// every older one is older still, or gone.
	return i > start || start > 0
}

// inBucket pages through a sealed generation's bucket within lo..hi; it
// reports true when the page is done, or no older generation can match.
func (p *pager) inBucket(b *bolt.Bucket, lo, hi uint64) bool {
	c := b.Cursor()
	if !p.q.Until.IsZero() {
		hi = min(hi, timeSeq(c, p.q.Until, lo, hi)-1)
	}
	start := lo
	if !p.q.Since.IsZero() {
		lo = timeSeq(c, p.q.Since, lo, hi)
	}
	if lo <= hi && p.q.Prefix != "" {
		if seqs, ok := p.prefixSeqs(c, lo, hi); ok {
			for _, s := range seqs {
				e, ok := summaryAt(b, s)
				if p.take(s, &e, ok) {
					return true
				}
			}
			return lo > start
		}
	}
	if lo <= hi && p.walk(b, p.family(), lo, hi) {
		return true
	}
	return lo > start
}

// family is the key prefix that serves q's type and tenant.
func (p *pager) family() []byte {
	switch q := p.q; {
	case q.Tenant != "" && q.Type != "":
		return indexPrefix('c', q.Tenant, q.Type)
	case q.Type != "":
		return indexPrefix('t', q.Type)
	case q.Tenant != "":
		return indexPrefix('n', q.Tenant)
	}
	return []byte{'s'}
}

// walk takes the events under family prefix pre in lo..hi, newest first;
// it reports true when the page is done.
func (p *pager) walk(b *bolt.Bucket, pre []byte, lo, hi uint64) bool {
	c := b.Cursor()
	k, v := genstore.Before(c, binary.BigEndian.AppendUint64(slices.Clone(pre), hi+1))
	summaries := len(pre) == 1 && pre[0] == 's'
	for ; k != nil && bytes.HasPrefix(k, pre) && len(k) == len(pre)+8; k, v = c.Prev() {
		s := binary.BigEndian.Uint64(k[len(pre):])
		if s < lo {
			return false
		}
		var e Entry
		var ok bool
		if summaries {
			var err error
			e, err = decode(s, v)
			ok = err == nil
		} else {
			e, ok = summaryAt(b, s)
		}
		if p.take(s, &e, ok) {
			return true
		}
	}
	return false
}

// prefixSeqs returns the sequences in lo..hi of the ids with q.Prefix,
// newest first, when the generation holds at most PrefixMax of them.
func (p *pager) prefixSeqs(c *bolt.Cursor, lo, hi uint64) ([]uint64, bool) {
	pre := append([]byte{'i'}, p.q.Prefix...)
	var seqs []uint64
	n := 0
	for k, _ := c.Seek(pre); k != nil && bytes.HasPrefix(k, pre); k, _ = c.Next() {
		if n++; n > PrefixMax {
			p.examined += n
			return nil, false
		}
		if len(k) < len(pre)+9 {
			continue
		}
		if s := binary.BigEndian.Uint64(k[len(k)-8:]); s >= lo && s <= hi {
			seqs = append(seqs, s)
		}
	}
	p.examined += n
	slices.SortFunc(seqs, func(a, b uint64) int { return cmpU(b, a) })
	return seqs, true
}

// summaryAt reads the summary of the event at seq in b.
func summaryAt(b *bolt.Bucket, seq uint64) (Entry, bool) {
	v := b.Get(summaryKey(seq))
	if v == nil {
		return Entry{}, false
	}
	e, err := decode(seq, v)
	return e, err == nil
}

// timeSeq is the smallest sequence s in lo..hi+1 such that every summary
// from s on (within lo..hi) was published at or after t, found by binary
// search: published times grow with sequences.
func timeSeq(c *bolt.Cursor, t time.Time, lo, hi uint64) uint64 {
	n := int(hi - lo + 1)
	i := sort.Search(n, func(i int) bool {
		k, v := c.Seek(summaryKey(lo + uint64(i)))
		if k == nil || k[0] != 's' || binary.BigEndian.Uint64(k[1:]) > hi {
			return true
		}
		at, ok := publishedAt(v)
		return !ok || !at.Before(t)
	})
	return lo + uint64(i)
}

// Lookup returns the newest event with id that the index holds.
func (x *Index) Lookup(id string) (Entry, bool, error) {
	if id == "" {
		return Entry{}, false, nil
	}
	x.mu.RLock()
	mem := make([]memGen, len(x.mem))
	for i, g := range x.mem {
		mem[i] = memGen{num: g.num, entries: g.entries[:len(g.entries):len(g.entries)]}
	}
	x.mu.RUnlock()
	for i := len(mem) - 1; i >= 0; i-- {
		es := mem[i].entries
		for k := len(es) - 1; k >= 0; k-- {
			if es[k].ID == id {
				return es[k], true, nil
			}
		}
	}
	var found Entry
	var ok bool
	pre := indexPrefix('i', id)
	err := x.f.EachGen(true, func(g uint64, b *bolt.Bucket) bool {
		if g >= mem[0].num {
			return true
		}
		c := b.Cursor()
		var last []byte
		for k, _ := c.Seek(pre); k != nil && bytes.HasPrefix(k, pre) && len(k) == len(pre)+8; k, _ = c.Next() {
			last = k
		}
		if last != nil {
			found, ok = summaryAt(b, binary.BigEndian.Uint64(last[len(pre):]))
		}
		return !ok
	})
	return found, ok, err
}
