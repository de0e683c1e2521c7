package server

import (
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// selfAnswer takes net/http's own answers byte for byte (as net/http/server.go writes them)
// and nothing else: a handler's answer, or a piece of a body, is never rewritten.
func TestSelfAnswer(t *testing.T) {
	const eh = plainErrorHeaders
	date := time.Date(2026, 6, 9, 10, 11, 12, 0, time.UTC).Format(http.TimeFormat)
	for in, want := range map[string]model.Kind{
		"HTTP/1.1 400 Bad Request" + eh + "400 Bad Request":                                                             model.KindMalformedRequest,
		"HTTP/1.1 400 Bad Request: missing required Host header" + eh + "400 Bad Request: missing required Host header": model.KindMalformedRequest,
		"HTTP/1.1 431 Request Header Fields Too Large" + eh + "431 Request Header Fields Too Large":                     model.KindHeadersTooLarge,
		"HTTP/1.1 501 Not Implemented" + eh + "Unsupported transfer encoding":                                           model.KindNotImplemented,
		"HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version" + eh +
			"505 HTTP Version Not Supported: unsupported protocol version": model.KindVersionUnsupported,
		"HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nDate: " + date + "\r\nContent-Length: 0\r\n\r\n": model.KindExpectationFailed,
		"HTTP/1.0 417 Expectation Failed\r\nConnection: close\r\nDate: " + date + "\r\nContent-Length: 0\r\n\r\n": model.KindExpectationFailed,

		// Not net/http's own: left alone.
		"HTTP/1.1 400 Bad Request" + eh + "400 Bad Request ":                                                              "",
		"HTTP/1.1 400 Bad Request" + eh + "400 Bad request":                                                               "",
		"HTTP/1.0 400 Bad Request" + eh + "400 Bad Request":                                                               "",
		"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n400 Bad Request": "",
		"HTTP/1.1 400 Bad Request: <script>" + eh + "400 Bad Request: <script>":                                           "", // not a status text of net/http's form
		"HTTP/1.1 404 Not Found: x" + eh + "404 Not Found: x":                                                             "",
		"HTTP/1.1 400 Bad Request\r\nContent-Length: 70\r\nContent-Type: application/json\r\n\r\n{}":                      "",
		"HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nDate: " + date + "\r\nContent-Length: 2\r\n\r\n{}":       "",
		"HTTP/1.1 200 OK\r\n\r\n": "",
	} {
		_, got := selfAnswer([]byte(in), 64)
		switch {
		case want == "" && got != nil:
			t.Errorf("%q is answered %v", in, got)
		case want != "" && (got == nil || got.Kind != want):
			t.Errorf("%q: %v, want %s", in, got, want)
		case got != nil && statusOf[got.Kind] == 0:
			t.Errorf("%s has no status", got.Kind)
		}
	}
	// Through the connection: net/http's answer is replaced, anything else goes out as it
	// was written, a write longer than any of net/http's answers included.
	s := &Server{log: slog.New(slog.DiscardHandler), metrics: newMetrics(nil)}
	for in, replaced := range map[string]bool{
		"HTTP/1.1 400 Bad Request" + eh + "400 Bad Request":                            true,
		"HTTP/1.1 400 Bad Request" + eh + strings.Repeat("x", maxSelfAnswer):           false,
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}":                               false,
		"HTTP/1.1 400 Bad Request" + eh + "400 Bad Request" + strings.Repeat(" ", 600): false,
	} {
		w := &recordConn{}
		c := &edgeConn{Conn: w, s: s}
		if n, err := c.Write([]byte(in)); n != len(in) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		got := w.buf.String()
		if replaced != (got != in) || replaced && !strings.Contains(got, `"error":"malformed_request"`) {
			t.Errorf("%.60q went out as %.200q", in, got)
		}
	}
}

// recordConn is a connection that keeps what is written to it.
type recordConn struct {
	net.Conn
	buf bytes.Buffer
}

func (c *recordConn) Write(p []byte) (int, error) { return c.buf.Write(p) }
func (c *recordConn) RemoteAddr() net.Addr        { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// BenchmarkSelfAnswerMiss is the cost the wrapper adds to a short answer of a handler
// (here POST /v1/events's 201, one write): the check that it is not net/http's own.
func BenchmarkSelfAnswerMiss(b *testing.B) {
	p := []byte("HTTP/1.1 201 Created\r\nContent-Length: 180\r\nContent-Type: application/json\r\n" +
		"X-Request-Id: 0190a3c4-5e6f-7a01-8b2c-3d4e5f607182\r\nDate: Tue, 09 Jun 2026 10:11:12 GMT\r\n\r\n" +
		`{"event_id":"0190a3c4-5e6f-7a01-8b2c-3d4e5f607101","status":"pending","channel_selected":"rest_full",` +
		`"created_at":"2026-06-09T10:11:12.345Z","request_id":"0190a3c4-5e6f-7a01-8b2c-3d4e5f607182"}` + "\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, a := selfAnswer(p, 64); a != nil {
			b.Fatal(a)
		}
	}
}
