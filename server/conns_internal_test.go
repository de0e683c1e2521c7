package server

import (
	"net"
	"net/http"
	"testing"
	"time"
)

// fakeConn is a connection from addr that records its close.
type fakeConn struct {
	net.Conn
	addr   net.Addr
	closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.addr }
func (c *fakeConn) Close() error         { c.closed = true; return nil }

func openOf(l *connLimiter) int { n, _ := l.openConns(); return n }

func from(ip string) *fakeConn {
	return &fakeConn{addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}}
}

// At a full cap, the longest idle connection that counts against it is closed to make room;
// a connection busy with a request, or that has not sent one, is never closed; without an
// idle one the new connection is refused, with the cap as the reason.
func TestConnLimiter_IdleClosedAtCap(t *testing.T) {
	l := newConnLimiter(ConnLimits{Total: 4, PerAddress: 2})
	now := time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	admit := func(c *fakeConn, wantRefused string) *connSlot {
		t.Helper()
		s, refused := l.admit(c)
		if refused != wantRefused || (s == nil) != (wantRefused != "") {
			t.Fatalf("admit %v: refused %q, want %q", c.addr, refused, wantRefused)
		}
		return s
	}
	a1, a2, a3 := from("10.0.0.1"), from("10.0.0.1"), from("10.0.0.1")
	s1, s2 := admit(a1, ""), admit(a2, "")
	admit(a3, refusedPerAddress) // both new: nothing to close
	l.connState(&edgeConn{Conn: s1}, http.StateActive)
	l.connState(&edgeConn{Conn: s2}, http.StateIdle)
	l.connState(&edgeConn{Conn: s1}, http.StateIdle) // idle after s2
	now = now.Add(minIdleToClose - time.Millisecond)
	admit(a3, refusedPerAddress) // idle, but not for long enough
	now = now.Add(time.Millisecond)
	s3 := admit(a3, "") // closes s2, the longest idle
	if !a2.closed || a1.closed || openOf(l) != 2 {
		t.Fatalf("closed: a1 %v a2 %v; open %d", a1.closed, a2.closed, openOf(l))
	}
	s2.Close() // net/http's own close afterwards gives nothing back twice
	if openOf(l) != 2 {
		t.Fatalf("open %d after the evicted connection's close", openOf(l))
	}

	// The total: two more from another address fill it; a third address's connection
	// closes the longest idle of all (s1), then is refused once none is idle.
	b1, b2 := from("10.0.0.2"), from("10.0.0.2")
	t1, _ := admit(b1, ""), admit(b2, "")
	l.connState(t1, http.StateIdle)
	now = now.Add(time.Hour)
	l.connState(t1, http.StateActive) // a request again: not idle
	c1, c2 := from("10.0.0.3"), from("10.0.0.3")
	admit(c1, "")
	if !a1.closed || b1.closed || openOf(l) != 4 {
		t.Fatalf("closed: a1 %v b1 %v; open %d", a1.closed, b1.closed, openOf(l))
	}
	admit(c2, refusedTotal)
	if got := [3]uint64{l.refused[0].Load(), l.refused[1].Load(), l.idleClosed.Load()}; got != [3]uint64{2, 1, 2} {
		t.Fatalf("refused per address, total; idle closed: %v", got)
	}

	// A close gives the slot back; an address without connections is forgotten.
	s3.Close()
	admit(c2, "")
	if len(l.byAddr) != 2 || l.byAddr[addrKey(a1.addr)] != nil || l.byAddr[addrKey(c2.addr)].n != 2 {
		t.Fatalf("by address: %v", l.byAddr)
	}
}

// With one connection per address, closing the address's only (idle) connection for a new
// one keeps the address counted.
func TestConnLimiter_OnePerAddress(t *testing.T) {
	l := newConnLimiter(ConnLimits{PerAddress: 1})
	l.minIdle = 0
	first, _ := l.admit(from("10.0.0.1"))
	l.connState(first, http.StateIdle)
	second, _ := l.admit(from("10.0.0.1"))
	if second == nil || openOf(l) != 1 {
		t.Fatalf("second %v, open %d", second, openOf(l))
	}
	if s, refused := l.admit(from("10.0.0.1")); s != nil || refused != refusedPerAddress {
		t.Fatalf("third: %v %q", s, refused)
	}
}

// An IPv4 address counts as itself (also mapped into IPv6); an IPv6 address as its /64.
func TestConnLimiter_AddrKey(t *testing.T) {
	key := func(s string) string { return addrKey(&net.TCPAddr{IP: net.ParseIP(s), Port: 1}).String() }
	for in, want := range map[string]string{
		"192.0.2.7":               "192.0.2.7",
		"::ffff:192.0.2.7":        "192.0.2.7",
		"2001:db8:1:2:aaaa::1":    "2001:db8:1:2::",
		"2001:db8:1:2:ffff::ffff": "2001:db8:1:2::",
		"::1":                     "::",
	} {
		if got := key(in); got != want {
			t.Errorf("addrKey(%s) = %s, want %s", in, got, want)
		}
	}
}
