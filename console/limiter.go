package console

import (
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failed sign-ins allowed per client address: a burst, then this many a
// second. The table holds at most maxLoginClients addresses.
const (
	loginRate       = rate.Limit(2)
	loginBurst      = 10
	maxLoginClients = 4096
)

// loginLimiter counts failed sign-ins per client address, so that a
// guesser (or a broken script) anywhere locks out only itself, never the
// operator signing in from elsewhere. IPv6 clients count per /64, the
// block one host usually holds. Memory is bounded: past maxLoginClients
// addresses, those whose limiter has refilled are forgotten first (they
// would start full again anyway), then the longest unseen.
type loginLimiter struct {
	mu      sync.Mutex
	clients map[netip.Addr]*loginClient
}

type loginClient struct {
	lim  *rate.Limiter
	seen time.Time
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{clients: map[netip.Addr]*loginClient{}}
}

// clientKey is the address failed sign-ins are counted under: the
// connection's remote address (not X-Forwarded-For, which any client can
// write), an IPv6 one cut to its /64.
func clientKey(remoteAddr string) netip.Addr {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{} // every unparsable address shares one limiter
	}
	a = a.Unmap()
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return a
}

// blocked reports whether remoteAddr has no failed sign-in left now.
func (l *loginLimiter) blocked(remoteAddr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clients[clientKey(remoteAddr)]
	return c != nil && c.lim.TokensAt(now) < 1
}

// failed spends one of remoteAddr's failed sign-ins.
func (l *loginLimiter) failed(remoteAddr string, now time.Time) {
	key := clientKey(remoteAddr)
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clients[key]
	if c == nil {
		if len(l.clients) >= maxLoginClients {
			l.evict(now)
		}
		c = &loginClient{lim: rate.NewLimiter(loginRate, loginBurst)}
		l.clients[key] = c
	}
	c.seen = now
	c.lim.AllowN(now, 1)
}

// evict makes room: it forgets every client whose limiter has refilled,
// and when that frees nothing, the eighth seen longest ago (so that a
// stream of new addresses costs one scan per many of them).
func (l *loginLimiter) evict(now time.Time) {
	for k, c := range l.clients {
		if c.lim.TokensAt(now) >= loginBurst {
			delete(l.clients, k)
		}
	}
	if len(l.clients) < maxLoginClients {
		return
	}
	keys := slices.Collect(maps.Keys(l.clients))
	slices.SortFunc(keys, func(a, b netip.Addr) int { return l.clients[a].seen.Compare(l.clients[b].seen) })
	for _, k := range keys[:len(keys)/8] {
		delete(l.clients, k)
	}
}

// size is the number of client addresses held.
func (l *loginLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}
