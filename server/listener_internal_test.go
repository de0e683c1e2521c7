package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
)

// selfAnswer takes net/http's own answers byte for byte (as net/http/server.go writes them)
// and nothing else: a handler's answer, or a piece of a body, is never rewritten.
func TestSelfAnswer(t *testing.T) {
	const eh = plainErrorHeaders
	date := time.Date(2026, 6, 9, 10, 11, 12, 0, time.UTC).Format(http.TimeFormat)
	for in, want := range map[string]engine.Kind{
		"HTTP/1.1 400 Bad Request" + eh + "400 Bad Request":                                                             engine.KindMalformedRequest,
		"HTTP/1.1 400 Bad Request: missing required Host header" + eh + "400 Bad Request: missing required Host header": engine.KindMalformedRequest,
		"HTTP/1.1 431 Request Header Fields Too Large" + eh + "431 Request Header Fields Too Large":                     engine.KindHeadersTooLarge,
		"HTTP/1.1 501 Not Implemented" + eh + "Unsupported transfer encoding":                                           engine.KindNotImplemented,
		"HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version" + eh +
			"505 HTTP Version Not Supported: unsupported protocol version": engine.KindVersionUnsupported,
		"HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nDate: " + date + "\r\nContent-Length: 0\r\n\r\n": engine.KindExpectationFailed,
		"HTTP/1.0 417 Expectation Failed\r\nConnection: close\r\nDate: " + date + "\r\nContent-Length: 0\r\n\r\n": engine.KindExpectationFailed,

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
	// A write longer than any of net/http's answers is never looked at.
	long := "HTTP/1.1 400 Bad Request" + eh + strings.Repeat("x", maxSelfAnswer)
	if c := (&edgeConn{}); len(long) <= maxSelfAnswer || c.Conn != nil {
		t.Fatal("setup")
	}
}

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
