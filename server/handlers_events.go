package server

import (
	"net/http"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

func (s *Server) handleCreateEvent(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	in, err := decodeInput[model.EventInput](r)
	if err != nil {
		return err
	}
	reqID := requestID(r)
	reply, err := s.eng.IngestEvent(r.Context(), principal(r), in, func(v any) (model.Reply, error) {
		b, err := renderAccepted(v, reqID)
		return model.Reply{Status: http.StatusCreated, Body: b, RequestID: reqID}, err
	})
	if err != nil {
		return err
	}
	writeReply(w, reply)
	return nil
}

func (s *Server) handleListEvents(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := model.EventFilter{ZoneCode: q.Get("zone_code"), Vertical: q.Get("vertical"), Status: q.Get("status"),
		Priority: q.Get("priority"), Type: q.Get("type"), Origin: q.Get("origin"), Query: q.Get("q")}
	switch q.Get("open") {
	case "", "false":
	case "true":
		f.Open = true
	default:
		return model.Invalid("open", "open must be true or false")
	}
	if f.Since, err = queryTime(r, "since"); err != nil {
		return err
	}
	if f.Until, err = queryTime(r, "until"); err != nil {
		return err
	}
	events, next, err := s.eng.Events(r.Context(), principal(r), f, page)
	if err != nil {
		return err
	}
	writeAppendedList(w, r, events, next)
	return nil
}

func (s *Server) handleGetEvent(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	ev, err := s.eng.Event(r.Context(), principal(r), ps.ByName("id"))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, ev)
}

// queryTime reads an optional RFC 3339 timestamp from the query.
func queryTime(r *http.Request, name string) (*time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, model.Invalid(name, "%s must be an RFC 3339 timestamp such as 2026-06-09T10:11:12.345Z", name)
	}
	return &t, nil
}
