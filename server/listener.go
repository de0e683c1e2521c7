package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Answers below the router (docs/decisions/0083-answers-below-router.md). net/http
// answers a request it cannot read by writing plain text to the connection itself, before
// any handler runs: a malformed request line, target (GET /v1/events/%zz), header or body
// framing (400), headers over MaxHeaderBytes (431), an Expect other than 100-continue
// (417), a transfer coding other than chunked (501), an HTTP version other than 1.x (505),
// and plain HTTP sent to the TLS port (400). Serve wraps each HTTP/1 connection so that
// these answers leave in the contract's envelope, with a request_id in the body and in
// X-Request-Id, like every other answer. Its wrapper recognises them by their exact bytes
// (net/http writes each in one Write, in a form that no handler's answer can take), so a
// change in a later Go shows as a failing test, never as a rewritten answer.

// Serve serves hs on ln until hs shuts down: TLS with tlsConfig (HTTP/2 when the client
// offers it, as http.Server.ServeTLS does), plain HTTP when it is nil. TLS is the
// listener's, so hs.TLSConfig is not used: Serve clears it (a TLSConfig without "h2" would
// keep net/http from setting up HTTP/2). Connections count against the Server's caps
// (ConnLimits; conns.go), for which Serve sets hs.ConnState (calling any hook it held).
func (s *Server) Serve(hs *http.Server, ln net.Listener, tlsConfig *tls.Config) error {
	if hook := hs.ConnState; hook != nil {
		hs.ConnState = func(c net.Conn, state http.ConnState) { s.conns.connState(c, state); hook(c, state) }
	} else {
		hs.ConnState = s.conns.connState
	}
	if tlsConfig == nil {
		return hs.Serve(&edgeListener{Listener: ln, s: s})
	}
	hs.TLSConfig = nil
	timeout := time.Duration(0)
	for _, d := range []time.Duration{hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout} {
		if d > 0 && (timeout == 0 || d < timeout) {
			timeout = d // net/http's own handshake timeout: the shortest of them
		}
	}
	return hs.Serve(&tlsEdgeListener{inner: ln, config: tlsConfig.Clone(), hs: hs, timeout: timeout, s: s,
		conns: make(chan acceptResult), done: make(chan struct{})})
}

// edgeListener hands net/http each plain connection within the caps wrapped in an
// edgeConn, and answers the others itself.
type edgeListener struct {
	net.Listener
	s *Server
}

func (l *edgeListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		slot, refused := l.s.conns.admit(c)
		if slot == nil {
			l.s.refuse(c, refused, false)
			continue
		}
		return &edgeConn{Conn: slot, s: l.s}, nil
	}
}

// tlsEdgeListener terminates TLS itself, each handshake in its own goroutine (so that a
// slow one holds nothing else up, as in net/http), and hands net/http an HTTP/2 connection
// as the *tls.Conn it serves HTTP/2 on, and an HTTP/1 one wrapped in an edgeTLSConn.
type tlsEdgeListener struct {
	inner   net.Listener
	config  *tls.Config
	hs      *http.Server
	timeout time.Duration
	s       *Server

	start     sync.Once
	conns     chan acceptResult
	done      chan struct{}
	closeOnce sync.Once
}

// acceptResult is a connection ready for net/http, or an error of the inner Accept.
type acceptResult struct {
	c   net.Conn
	err error
}

func (l *tlsEdgeListener) Accept() (net.Conn, error) {
	l.start.Do(func() {
		// hs.Serve has set up HTTP/2 (or not) before its first Accept: offer "h2" only when
		// it is served.
		protos := []string{"http/1.1"}
		if l.hs.TLSNextProto["h2"] != nil {
			protos = []string{"h2", "http/1.1"}
		}
		l.config.NextProtos = protos
		go l.acceptLoop()
	})
	select {
	case <-l.done:
		return nil, net.ErrClosed
	default:
	}
	select {
	case a := <-l.conns:
		return a.c, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// acceptLoop accepts until the listener closes. Any other error goes to hs.Serve, which
// retries a temporary one and otherwise returns, closing the listener.
func (l *tlsEdgeListener) acceptLoop() {
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case l.conns <- acceptResult{err: err}:
				continue
			case <-l.done:
				return
			}
		}
		slot, refused := l.s.conns.admit(c)
		if slot == nil {
			l.s.refuse(c, refused, true)
			continue
		}
		go l.handshake(slot)
	}
}

// handshake runs the TLS handshake of raw within the timeout and hands the connection on.
func (l *tlsEdgeListener) handshake(raw net.Conn) {
	tc := tls.Server(raw, l.config)
	if l.timeout > 0 {
		_ = raw.SetDeadline(time.Now().Add(l.timeout))
	}
	err := tc.Handshake()
	if err != nil {
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			// Plain HTTP on the TLS port: answered in plain HTTP, as net/http does.
			l.s.answerBelowRouter(re.Conn, raw.RemoteAddr(), "HTTP/1.0",
				model.Errorf(model.KindMalformedRequest, "this port speaks HTTPS: the client sent plain HTTP"))
		} else {
			l.s.log.Warn("TLS handshake error", "remote", raw.RemoteAddr().String(), "error", err.Error())
		}
		_ = raw.Close()
		return
	}
	_ = raw.SetDeadline(time.Time{})
	var c net.Conn = tc
	if tc.ConnectionState().NegotiatedProtocol != "h2" {
		c = &edgeTLSConn{edgeConn: edgeConn{Conn: tc, s: l.s}, tc: tc}
	}
	select {
	case l.conns <- acceptResult{c: c}:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *tlsEdgeListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.inner.Close()
}

func (l *tlsEdgeListener) Addr() net.Addr { return l.inner.Addr() }

// looksLikeHTTP is net/http's test of a TLS record header that is the start of a plain
// HTTP request.
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// edgeConn is an HTTP/1 connection whose writes of net/http's own answers are replaced by
// the contract's envelope; every other write goes through untouched.
type edgeConn struct {
	net.Conn
	s *Server
}

// maxSelfAnswer bounds the length of net/http's own answers (the longest is under 200
// bytes): a longer write is never one.
const maxSelfAnswer = 512

func (c *edgeConn) Write(p []byte) (int, error) {
	if len(p) <= maxSelfAnswer && len(p) > 9 && p[0] == 'H' {
		if proto, answer := selfAnswer(p, maxHeaderBytes>>10); answer != nil {
			if err := c.s.answerBelowRouter(c.Conn, c.RemoteAddr(), proto, answer); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// CloseWrite half-closes the connection, as net/http does after its 431 when the
// connection allows it.
func (c *edgeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// edgeTLSConn is an edgeConn over TLS: net/http reads its TLS state for Request.TLS.
type edgeTLSConn struct {
	edgeConn
	tc *tls.Conn
}

func (c *edgeTLSConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }

// net/http's own answers (net/http/server.go, conn.serve and response.sendExpectationFailed).
const (
	plainErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	// 417: after the status line, these headers around a Date of http.TimeFormat's 29 bytes.
	expectationHead = "\r\nConnection: close\r\nDate: "
	expectationTail = "\r\nContent-Length: 0\r\n\r\n"
	httpDateLen     = len(http.TimeFormat)
)

// selfAnswer returns the protocol of p and the error to answer instead when p is, byte for
// byte, one of net/http's own answers; nil otherwise. It runs on every short write that
// starts an HTTP/1 answer, so it compares without allocating.
func selfAnswer(p []byte, headerKiB int) (string, *model.Error) {
	var proto string
	switch string(p[:9]) {
	case "HTTP/1.1 ":
		proto = "HTTP/1.1"
	case "HTTP/1.0 ":
		proto = "HTTP/1.0"
	default:
		return "", nil
	}
	end := bytes.IndexByte(p, '\r')
	if end < 0 {
		return "", nil
	}
	status, rest := p[9:end], p[end:]
	// 417, the only one written as a response (with a Date), in the request's protocol.
	if string(status) == "417 Expectation Failed" &&
		len(rest) == len(expectationHead)+httpDateLen+len(expectationTail) &&
		string(rest[:len(expectationHead)]) == expectationHead &&
		string(rest[len(expectationHead)+httpDateLen:]) == expectationTail {
		return proto, model.Errorf(model.KindExpectationFailed,
			"unsupported Expect header: the node understands only Expect: 100-continue")
	}
	// The others: "HTTP/1.1 " + status + plainErrorHeaders + body, in one write.
	if proto != "HTTP/1.1" || !bytes.HasPrefix(rest, []byte(plainErrorHeaders)) {
		return "", nil
	}
	body := rest[len(plainErrorHeaders):]
	switch {
	case string(status) == "501 Not Implemented" && string(body) == "Unsupported transfer encoding":
		return proto, model.Errorf(model.KindNotImplemented,
			"unsupported Transfer-Encoding: the node understands only chunked")
	case !bytes.Equal(status, body):
		return "", nil
	}
	switch string(status) {
	case "431 Request Header Fields Too Large":
		return proto, model.Errorf(model.KindHeadersTooLarge, "the request's headers are larger than %d KiB", headerKiB)
	case "400 Bad Request":
		return proto, model.Errorf(model.KindMalformedRequest, "malformed request: its request line "+
			"(method, target or version; a target must be a URL, with valid %%-escapes), a header or its body "+
			"framing (Content-Length, Transfer-Encoding) could not be read")
	// net/http's statusError values: a status with a fixed reason.
	case "400 Bad Request: missing required Host header", "400 Bad Request: malformed Host header",
		"400 Bad Request: invalid header name", "400 Bad Request: invalid header value":
		return proto, model.Errorf(model.KindMalformedRequest, "malformed request: %s", status[len("400 Bad Request: "):])
	case "505 HTTP Version Not Supported: unsupported protocol version":
		return proto, model.Errorf(model.KindVersionUnsupported,
			"unsupported protocol version: the node speaks HTTP/1.0, HTTP/1.1 and HTTP/2")
	}
	return "", nil
}

// answerBelowRouter writes err in the contract's envelope on c, closing the exchange
// (Connection: close), and logs it as the access log logs a request.
func (s *Server) answerBelowRouter(c net.Conn, remote net.Addr, proto string, err *model.Error) error {
	out, id := envelope(proto, err)
	_, werr := c.Write(out)
	status := statusOf[err.Kind]
	s.metrics.unmatched.observe(status, 0)
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("request_id", id),
		slog.String("method", "-"), slog.String("path", "-"), slog.Int("status", status),
		slog.String("remote", remote.String()), slog.String("error", string(err.Kind)))
	return werr
}

// envelope is the whole answer of err in proto, in the contract's envelope with a new
// request id (returned too), with Connection: close, and Retry-After when err has one:
// the answers written to a connection below the router.
func envelope(proto string, err *model.Error) ([]byte, string) {
	id := model.NewID()
	status := statusOf[err.Kind]
	body, _ := json.Marshal(errorBody{Error: err.Kind, Message: err.Msg, RequestID: id})
	body = append(body, '\n')
	out := make([]byte, 0, 256+len(body))
	out = append(out, proto...)
	out = append(out, ' ')
	out = strconv.AppendInt(out, int64(status), 10)
	out = append(out, ' ')
	out = append(out, http.StatusText(status)...)
	out = append(out, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\nConnection: close\r\nDate: "...)
	out = time.Now().UTC().AppendFormat(out, http.TimeFormat)
	if err.RetryAfter > 0 {
		out = append(out, "\r\nRetry-After: "...)
		out = strconv.AppendInt(out, int64(math.Ceil(err.RetryAfter.Seconds())), 10)
	}
	out = append(out, "\r\nX-Content-Type-Options: nosniff\r\nX-Request-Id: "...)
	out = append(out, id...)
	out = append(out, "\r\n\r\n"...)
	out = append(out, body...)
	return out, id
}
