package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/julienschmidt/httprouter"
)

// handleParsers lists the event parsers of the caller's tenant verticals (the standard
// ones plus the tenant's custom ones), sorted by vertical; ?vertical=… keeps one, and a
// vertical the tenant does not have is a validation_error on `vertical`.
func (s *Server) handleParsers(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	t, err := s.eng.TenantOf(r.Context(), principal(r))
	if err != nil {
		return err
	}
	parsers := engine.Parsers(t.Verticals)
	if q := r.URL.Query(); q.Has("vertical") {
		v := q.Get("vertical")
		var one []engine.ParserInfo
		for _, p := range parsers {
			if p.Vertical == v {
				one = append(one, p)
			}
		}
		if one == nil {
			return engine.Invalid("vertical", "vertical must be one of the tenant's verticals")
		}
		parsers = one
	}
	writeList(w, r, parsers, "")
	return nil
}
