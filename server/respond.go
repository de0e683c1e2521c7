package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// writeJSON writes v as the JSON body with the given status.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		body = []byte(`{"error":"internal_error","message":"internal error","request_id":` + strconv.Quote(requestID(r)) + `}`)
		status = http.StatusInternalServerError
	}
	writeBody(w, status, body)
}

// Header values every answer shares (sharedValue).
var (
	valJSON      = []string{"application/json"}
	valNosniff   = []string{"nosniff"}
	valUnlimited = []string{"unlimited"}
)

// sharedValue: a header value that many answers carry is one slice, set by its
// canonical name (h[name] = v, not h.Set, which canonicalizes the name and allocates the
// slice each time). net/http only reads an answer's header values; an answer that sets
// its own value replaces the slice, and Add appends to a copy (its capacity is full).

// writeBody writes a ready JSON body.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = valJSON
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// render encodes a single resource as a flat JSON object with request_id added.
func render(v any, reqID string) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return withRequestID(body, reqID), nil
}

// withRequestID adds "request_id" to the JSON object in body, in a buffer with room for
// the newline writeBody adds.
func withRequestID(body []byte, reqID string) []byte {
	body = bytes.TrimRight(body, " \n")
	out := make([]byte, 0, len(body)+len(reqID)+len(`,"request_id":""}`)+1)
	out = append(out, body[:len(body)-1]...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"request_id":`...)
	out = strconv.AppendQuote(out, reqID)
	return append(out, '}')
}

// list is the envelope of every list.
type list[T any] struct {
	Data       []T    `json:"data"`
	Count      int    `json:"count"`
	NextCursor string `json:"next_cursor,omitempty"`
	RequestID  string `json:"request_id"`
}

// jsonAppender is a record that writes its own JSON (the same document json.Marshal
// makes, faster).
type jsonAppender interface{ AppendJSON(b []byte) []byte }

// writeAppendedList answers a page of items that write their own JSON: writeList
// without reflection, for long lists.
func writeAppendedList[T any, P interface {
	*T
	jsonAppender
}](w http.ResponseWriter, r *http.Request, items []T, next string) {
	b := make([]byte, 0, 1024)
	b = append(b, `{"data":[`...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = P(&items[i]).AppendJSON(b)
		if i == 0 && len(items) > 1 {
			// Size the answer from its first item, with a margin: one allocation for a
			// list of records of like size, whatever they weigh (scores, events).
			first := len(b) - len(`{"data":[`)
			b = slices.Grow(b, (first+1)*(len(items)-1)*5/4+128)
		}
	}
	b = append(b, `],"count":`...)
	b = strconv.AppendInt(b, int64(len(items)), 10)
	if next != "" {
		b = append(b, `,"next_cursor":`...)
		b = strconv.AppendQuote(b, next)
	}
	b = append(b, `,"request_id":`...)
	b = strconv.AppendQuote(b, requestID(r))
	writeBody(w, http.StatusOK, append(b, '}'))
}

// writeList answers a page of items.
func writeList[T any](w http.ResponseWriter, r *http.Request, items []T, next string) {
	if items == nil {
		items = []T{}
	}
	writeJSON(w, r, http.StatusOK, list[T]{Data: items, Count: len(items), NextCursor: next, RequestID: requestID(r)})
}

// writeOne answers a single resource.
func writeOne(w http.ResponseWriter, r *http.Request, status int, v any) error {
	body, err := render(v, requestID(r))
	if err != nil {
		return err
	}
	writeBody(w, status, body)
	return nil
}

// deleted is the answer of every DELETE.
type deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// deletedView is the view of a deleted record: its id and deleted true.
func deletedView(v any) any {
	switch r := v.(type) {
	case *model.Zone:
		return deleted{ID: r.ID, Deleted: true}
	case *model.Webhook:
		return deleted{ID: r.ID, Deleted: true}
	case *model.APIKey:
		return deleted{ID: r.ID, Deleted: true}
	}
	panic(fmt.Sprintf("deletedView: %T", v))
}
