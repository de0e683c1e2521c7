package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	rep, err := s.eng.Usage(r.Context(), principal(r), model.UsageQuery{Period: q.Get("period"),
		From: q.Get("from"), To: q.Get("to")})
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, rep)
}

func (s *Server) handleBilling(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	b, err := s.eng.Billing(r.Context(), principal(r))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, b)
}
