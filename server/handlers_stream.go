package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// Stream settings.
const (
	// streamWriteTimeout bounds each write of a stream: a client that stops reading is cut
	// (the broker has dropped it long before, so it never held a commit back).
	streamWriteTimeout = 20 * time.Second
	// streamRetryMs is the reconnection delay an EventSource client is told.
	streamRetryMs = 3000
	// streamMaxBatch bounds the changes written between two flushes.
	streamMaxBatch = 256
)

// handleStream answers GET /v1/stream: Server-Sent Events of the caller's tenant's changes
// that the caller may see (engine.StreamViewer). The stream opens with `event: ready`;
// each change is `id: <epoch>-<seq>` (`db-<seq>` on a store with a change feed, the same
// on every process), `event: <name>`, `data: <payload JSON>`. A
// Last-Event-ID header resumes after that id from the tenant's ring; an id the ring no
// longer holds (or of an earlier run of the node) gets `event: reset`, after which the
// client should reload what it shows. A comment every StreamHeartbeat keeps proxies
// from closing the connection, and the caller's credentials are checked again then: a
// token that expired or was revoked ends the stream with `event: error`.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	p := principal(r)
	viewer, err := s.eng.StreamViewer(r.Context(), p)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	if r.Method == http.MethodHead {
		// The headers a stream would open with, and no stream (docs/decisions/0081-head.md).
		w.WriteHeader(http.StatusOK)
		return nil
	}
	b := s.eng.Stream()
	var after uint64
	known := true
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		after, known = b.ParseEventID(id)
	}
	if !known {
		after = 0
	}
	sub, backlog, head, resumed, err := b.SubscribeContext(r.Context(), p.TenantID, after)
	if err != nil {
		return err
	}
	defer func() { sub.Close() }()

	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The server's ReadTimeout would end the request's context mid-stream.
	_ = rc.SetReadDeadline(time.Time{})
	sw := &sseWriter{w: w, rc: rc, b: b}
	sw.buf = append(sw.buf, "retry: "+strconv.Itoa(streamRetryMs)+"\n"...)
	sw.event("", "ready", map[string]any{"head": b.EventID(head), "resumed": resumed && known && after > 0})
	switch {
	case !resumed || !known:
		sw.reset(head, "the changes after Last-Event-ID are no longer held: reload")
	case after == 0:
		sw.seen, sw.sent = head, head
	default:
		sw.seen, sw.sent = after, after
	}
	for i := range backlog {
		sw.change(viewer, &backlog[i])
	}
	if sw.flush() != nil {
		return nil
	}

	beat := time.NewTicker(s.cfg.StreamHeartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-s.closing:
			return nil
		case <-beat.C:
			if _, err := s.authenticate(r); err != nil {
				var e *model.Error
				kind := model.KindUnauthorized
				if errors.As(err, &e) {
					kind = e.Kind
				}
				sw.event("", "error", map[string]string{"error": string(kind), "message": "the session ended: log in again"})
				_ = sw.flush()
				return nil
			}
			if sw.seen > sw.sent { // changes the caller may not see: move its id on
				sw.buf = append(sw.buf, "id: "+b.EventID(sw.seen)+"\n\n"...)
				sw.sent = sw.seen
			}
			sw.buf = append(sw.buf, ": ping\n\n"...)
		case c, ok := <-sub.C:
			if !ok { // dropped for falling behind: catch up from the ring, or reset
				ns, nb, nh, nr, err := b.SubscribeContext(r.Context(), p.TenantID, sw.seen)
				if err != nil {
					return nil // the stream ends; the client reconnects with its Last-Event-ID
				}
				sub, backlog, head, resumed = ns, nb, nh, nr
				if !resumed {
					sw.reset(head, "this client fell behind: reload")
				}
				for i := range backlog {
					sw.change(viewer, &backlog[i])
				}
				break
			}
			sw.change(viewer, &c)
			if c.Name == engine.StreamTeamUpdated {
				_ = viewer.Refresh(r.Context(), s.eng) // a member may have joined a team
			}
		drain:
			for range streamMaxBatch {
				select {
				case c, ok := <-sub.C:
					if !ok {
						break drain // the next round resubscribes
					}
					sw.change(viewer, &c)
				default:
					break drain
				}
			}
		}
		if sw.flush() != nil {
			return nil
		}
	}
}

// sseWriter builds and writes the stream's messages.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	b   *engine.Broker
	buf []byte
	// seen is the seq of the last change handled, sent or not; sent the last id sent.
	seen, sent uint64
}

func (sw *sseWriter) event(id, name string, v any) {
	data, _ := json.Marshal(v)
	sw.message(id, name, data)
}

func (sw *sseWriter) message(id, name string, data []byte) {
	if id != "" {
		sw.buf = append(sw.buf, "id: "+id+"\n"...)
	}
	sw.buf = append(sw.buf, "event: "+name+"\ndata: "...)
	sw.buf = append(sw.buf, data...)
	sw.buf = append(sw.buf, "\n\n"...)
}

// change writes c when the viewer may see it.
func (sw *sseWriter) change(v *engine.StreamViewer, c *model.Change) {
	if c.Seq <= sw.seen {
		return
	}
	sw.seen = c.Seq
	if !v.Sees(c) {
		return
	}
	sw.message(sw.b.EventID(c.Seq), c.Name, c.Data)
	sw.sent = c.Seq
}

// reset tells the client to reload: its next id is the head.
func (sw *sseWriter) reset(head uint64, why string) {
	sw.event(sw.b.EventID(head), "reset", map[string]string{"reason": why})
	sw.seen, sw.sent = head, head
}

// flush writes what is buffered within streamWriteTimeout.
func (sw *sseWriter) flush() error {
	if len(sw.buf) == 0 {
		return nil
	}
	_ = sw.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	_, err := sw.w.Write(sw.buf)
	sw.buf = sw.buf[:0]
	if err == nil {
		err = sw.rc.Flush()
	}
	return err
}
