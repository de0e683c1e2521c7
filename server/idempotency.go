package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// headerIdempotencyKey names a write's idempotency key; a body field idempotency_key does
// the same where a body exists.
const headerIdempotencyKey = "Idempotency-Key"

// idempotencyKey reads a write's key from the header, else from the body (found by the
// decode of its input; see reqBody). Keys are scoped to the tenant and the route
// (method and path). The key is checked once, by the engine's write (engine/idempotency.go,
// storeKey), before anything runs. The fingerprint is that of the body's canonical JSON,
// the form every stored record holds (docs/decisions/0146-one-way-through-request.md).
func (s *Server) idempotencyKey(r *http.Request, body *reqBody) (*model.IdempotencyKey, error) {
	key := r.Header.Get(headerIdempotencyKey)
	var raw []byte
	if body != nil {
		raw = body.raw
	}
	if key == "" && len(raw) > 0 {
		k, err := body.idempotencyKey()
		if err != nil {
			return nil, err
		}
		key = k
	}
	if key == "" {
		return nil, nil
	}
	parsedBody()
	return &model.IdempotencyKey{Route: r.Method + " " + r.URL.Path, Key: key,
		Fingerprint:    engine.Fingerprint(s.fpSecret, engine.CanonicalJSON(raw)),
		RawFingerprint: engine.Fingerprint(s.fpSecret, raw)}, nil
}

// write answers one write use case: call runs it with the request's idempotency key and
// how its result is rendered (status, the body of view(result) or of the result itself,
// with the request id). The use case checks the key, runs, renders and stores the reply
// in one transaction (engine/idempotency.go); a replay answers the stored status, body and
// request id. body is the write's body as decodeBody read it (nil: none).
func (s *Server) write(w http.ResponseWriter, r *http.Request, body *reqBody, status int, view func(any) any, call func(*model.Write) error) error {
	key, err := s.idempotencyKey(r, body)
	if err != nil {
		return err
	}
	wr := &model.Write{Key: key, Render: renderAs(r, status, view)}
	if err := call(wr); err != nil {
		return err
	}
	writeReply(w, wr.Reply)
	return nil
}

// renderAs renders a result as the reply of r with status: the body of view(result) (nil
// view: the result) with the request id.
func renderAs(r *http.Request, status int, view func(any) any) model.Render {
	reqID := requestID(r)
	return func(v any) (model.Reply, error) {
		if view != nil {
			v = view(v)
		}
		b, err := render(v, reqID)
		return model.Reply{Status: status, Body: b, RequestID: reqID}, err
	}
}

// writeReply answers the reply of a write; a replay carries the original request id and
// Idempotent-Replayed.
func writeReply(w http.ResponseWriter, reply model.Reply) {
	if reply.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
		w.Header().Set("X-Request-Id", reply.RequestID)
	}
	if !reply.Replayed && reply.Shown != nil {
		writeBody(w, reply.Status, reply.Shown)
		return
	}
	writeBody(w, reply.Status, reply.Body)
}
