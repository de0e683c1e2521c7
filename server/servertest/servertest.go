// Package servertest holds the HTTP helpers that the tests of the server, of the CLI and of
// the binary share: a request builder with a JSON body and header pairs, and a log sink
// safe to read while a server writes to it.
//
// It is imported by _test.go files only; no production package may import it (the test
// TestLayering_TestHelpers in engine holds that). See store/storetest and
// engine/model/modeltest for the other shared helpers,
// and docs/decisions/0087-test-helpers-once.md.
package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// NewRequest builds a request to url. body is sent as it is when it is a string or a
// []byte, JSON-encoded otherwise, and none when nil; a request with a body says
// Content-Type application/json. headers are name, value pairs.
func NewRequest(tb testing.TB, ctx context.Context, method, url string, body any, headers ...string) *http.Request {
	tb.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			tb.Fatalf("encoding the body of %s %s: %v", method, url, err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		tb.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// SyncBuffer is an output sink safe to read while another goroutine (a server's logger, a
// child process) writes to it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
