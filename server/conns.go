package server

import (
	idlelist "container/list"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Connection caps (docs/decisions/0141-connection-caps.md). Every connection Serve accepts
// takes a slot, counted against its client address and against the total, until it
// closes. A connection over either cap closes the longest idle keep-alive connection that
// counts against the same cap, when one has been idle for minIdleToClose; otherwise it is
// refused at once, without reading a byte of it: plain HTTP gets a 503 unavailable in the
// envelope, TLS (before any handshake) a close.

// ConnLimits caps the connections a Server holds open. Zero means no cap.
type ConnLimits struct {
	// Total caps the connections of every client together.
	Total int
	// PerAddress caps the connections of one client address: an IPv4 address, or an IPv6
	// /64 (what one host is given).
	PerAddress int
}

// Reasons of a refused connection: the label of fieldrelay_http_connections_refused_total.
const (
	refusedPerAddress = "per_address"
	refusedTotal      = "total"
)

const (
	// minIdleToClose is how long a connection must have been idle before a new one may
	// take its place. A client that reuses its connection within it is not raced (its
	// next request could be on the way), and an address that churns connections at its
	// cap is served about PerAddress new ones a second: the others are refused, which
	// costs the node much less than serving them.
	minIdleToClose = time.Second
	// refuseRetryAfter is the Retry-After of a refusal.
	refuseRetryAfter = time.Second
	// maxLingering bounds the refused connections held while their 503 drains, and
	// lingerFor how long each is held: a close with the request still unread would
	// reset the connection and could take the answer with it (net/http waits likewise
	// after its own answers). Over the bound, a refused connection closes at once.
	maxLingering = 64
	lingerFor    = 500 * time.Millisecond
	// refusalLogEvery spaces the log lines about refusals: one per refused connection
	// would let a flood fill the log.
	refusalLogEvery = 10 * time.Second
)

// connLimiter counts the open connections and applies the caps.
type connLimiter struct {
	limits  ConnLimits
	minIdle time.Duration    // minIdleToClose; tests set less
	now     func() time.Time // time.Now; tests set a fake

	mu     sync.Mutex
	open   int
	byAddr map[netip.Addr]*addrConns // with a per-address cap only
	idle   idlelist.List             // of *connSlot, longest idle first

	refused    [2]atomic.Uint64 // per address, total
	idleClosed atomic.Uint64
	lingering  chan struct{}
	lastLog    atomic.Int64 // unix nanoseconds of the latest refusal log line
}

// addrConns are the connections of one client address.
type addrConns struct {
	n    int
	idle idlelist.List // of *connSlot, longest idle first
}

func newConnLimiter(limits ConnLimits) *connLimiter {
	l := &connLimiter{limits: limits, minIdle: minIdleToClose, now: time.Now, lingering: make(chan struct{}, maxLingering)}
	if limits.PerAddress > 0 {
		l.byAddr = make(map[netip.Addr]*addrConns)
	}
	return l
}

// connSlot is an accepted connection that holds a slot until it closes.
type connSlot struct {
	net.Conn
	l    *connLimiter
	key  netip.Addr // addrKey of the remote address (with a per-address cap)
	addr *addrConns // nil without a per-address cap
	// Guarded by l.mu: released once the slot is given back; the list elements and
	// since when while the connection is idle.
	released         bool
	idleEl, addrIdle *idlelist.Element
	idleSince        time.Time
}

func (c *connSlot) Close() error {
	c.l.release(c)
	return c.Conn.Close()
}

// CloseWrite half-closes the connection (edgeConn.CloseWrite reaches it).
func (c *connSlot) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// addrKey is the address a connection counts against: its IP (an IPv4-mapped IPv6
// address as IPv4), an IPv6 address reduced to its /64. A remote address that is not an
// IP (a unix socket in a test) counts against the zero key.
func addrKey(a net.Addr) netip.Addr {
	var ip netip.Addr
	if ta, ok := a.(*net.TCPAddr); ok {
		ip = ta.AddrPort().Addr()
	} else if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		ip = ap.Addr()
	}
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			ip = p.Addr()
		}
	}
	return ip
}

// admit gives c a slot, evicting the longest idle connection that counts against a full
// cap; it returns nil and the reason when c is refused.
func (l *connLimiter) admit(c net.Conn) (*connSlot, string) {
	var victims [2]*connSlot
	var key netip.Addr
	var a *addrConns
	// The front of an idle list is its longest idle connection: if it is too recent to
	// close, they all are.
	closable := func(idle *idlelist.List) *connSlot {
		if e := idle.Front(); e != nil {
			if v := e.Value.(*connSlot); l.now().Sub(v.idleSince) >= l.minIdle {
				return v
			}
		}
		return nil
	}
	l.mu.Lock()
	if l.byAddr != nil {
		key = addrKey(c.RemoteAddr())
		if a = l.byAddr[key]; a != nil && a.n >= l.limits.PerAddress {
			if victims[0] = closable(&a.idle); victims[0] == nil {
				l.mu.Unlock()
				l.refused[0].Add(1)
				return nil, refusedPerAddress
			}
			l.releaseLocked(victims[0])
		}
	}
	if l.limits.Total > 0 && l.open >= l.limits.Total {
		if victims[1] = closable(&l.idle); victims[1] == nil {
			l.mu.Unlock()
			l.refused[1].Add(1)
			return nil, refusedTotal
		}
		l.releaseLocked(victims[1])
	}
	l.open++
	if l.byAddr != nil {
		if a == nil {
			a = &addrConns{}
		}
		a.n++
		l.byAddr[key] = a // again when an eviction left it empty, and so removed it
	}
	l.mu.Unlock()
	for _, v := range victims {
		if v != nil {
			l.idleClosed.Add(1)
			_ = v.Conn.Close() // net/http's read of it fails, and the connection ends
		}
	}
	return &connSlot{Conn: c, l: l, key: key, addr: a}, ""
}

// release gives c's slot back, once.
func (l *connLimiter) release(c *connSlot) {
	l.mu.Lock()
	l.releaseLocked(c)
	l.mu.Unlock()
}

func (l *connLimiter) releaseLocked(c *connSlot) {
	if c.released {
		return
	}
	c.released = true
	l.unidleLocked(c)
	l.open--
	if a := c.addr; a != nil {
		if a.n--; a.n == 0 {
			delete(l.byAddr, c.key)
		}
	}
}

func (l *connLimiter) unidleLocked(c *connSlot) {
	if c.idleEl != nil {
		l.idle.Remove(c.idleEl)
		c.idleEl = nil
	}
	if c.addrIdle != nil {
		c.addr.idle.Remove(c.addrIdle)
		c.addrIdle = nil
	}
}

// connState is http.Server.ConnState: a connection waiting for its next request (an
// HTTP/2 one without a stream) may be closed for a new one once idle for minIdle, longest
// idle first; one that is reading or answering a request, or has not sent one yet, may not
// (docs/decisions/0143-idle-connections-make-room-cap.md).
func (l *connLimiter) connState(nc net.Conn, state http.ConnState) {
	c := slotOf(nc)
	if c == nil {
		return
	}
	l.mu.Lock()
	switch {
	case c.released:
	case state == http.StateIdle:
		if c.idleEl == nil {
			c.idleSince = l.now()
			c.idleEl = l.idle.PushBack(c)
			if c.addr != nil {
				c.addrIdle = c.addr.idle.PushBack(c)
			}
		}
	default:
		l.unidleLocked(c)
	}
	l.mu.Unlock()
}

// slotOf finds the slot under a connection Serve handed to net/http.
func slotOf(c net.Conn) *connSlot {
	for {
		switch v := c.(type) {
		case *connSlot:
			return v
		case *edgeConn:
			c = v.Conn
		case *edgeTLSConn:
			c = v.Conn
		case *tls.Conn:
			c = v.NetConn()
		default:
			return nil
		}
	}
}

// openConns is the number of connections holding a slot, and of those idle.
func (l *connLimiter) openConns() (open, idle int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.idle.Len()
}

// refuse ends a connection refused for reason: over TLS a close (a plain-text answer
// would not be understood before a handshake, and a handshake costs what the cap
// saves), otherwise a 503 unavailable in the envelope, written without reading the
// request, then a close. Refusals are logged at most once per refusalLogEvery
// (docs/decisions/0142-over-connection-cap-503-before-reading.md).
func (s *Server) refuse(c net.Conn, reason string, withTLS bool) {
	l := s.conns
	now := time.Now().UnixNano()
	if last := l.lastLog.Load(); now-last >= int64(refusalLogEvery) && l.lastLog.CompareAndSwap(last, now) {
		open, idle := l.openConns()
		s.log.Warn("connections refused: over the connection cap", "reason", reason, "remote", c.RemoteAddr().String(),
			"max_conns", l.limits.Total, "max_conns_per_ip", l.limits.PerAddress, "open", open, "idle", idle,
			"refused_per_address", l.refused[0].Load(), "refused_total", l.refused[1].Load())
	}
	if withTLS {
		_ = c.Close()
		return
	}
	msg := "too many connections from this address: close idle ones or retry later"
	if reason == refusedTotal {
		msg = "the node has too many open connections: retry later"
	}
	// A new connection's send buffer is empty, so the write does not wait; the deadline
	// only bounds a stalled one.
	_ = c.SetWriteDeadline(time.Now().Add(lingerFor))
	out, _ := envelope("HTTP/1.1", &model.Error{Kind: model.KindUnavailable, Msg: msg, RetryAfter: refuseRetryAfter})
	if _, err := c.Write(out); err != nil {
		_ = c.Close()
		return
	}
	select {
	case l.lingering <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.lingering }()
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_ = c.SetReadDeadline(time.Now().Add(lingerFor))
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
		_ = c.Close()
	}()
}
