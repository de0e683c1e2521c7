package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/julienschmidt/httprouter"
)

// handleParsers lists the event parsers of the caller's tenant verticals (the standard
// ones plus the tenant's custom ones), by vertical; ?vertical=… keeps one (and must be one of them).
func (s *Server) handleParsers(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	t, err := s.eng.Tenant(r.Context(), principal(r))
	if err != nil {
		return err
	}
	var vertical *string
	if q := r.URL.Query(); q.Has("vertical") {
		v := q.Get("vertical")
		vertical = &v
	}
	parsers, next, err := engine.ListParsers(t.Verticals, vertical, page)
	if err != nil {
		return err
	}
	writeList(w, r, parsers, next)
	return nil
}
