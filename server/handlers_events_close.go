package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// handleCloseEvent closes an incident with a disposition (POST /v1/events/:id/close).
func (s *Server) handleCloseEvent(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, in, err := decodeBody[model.CloseEventInput](r)
	if err != nil {
		return err
	}
	id := ps.ByName("id")
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.CloseEvent(r.Context(), principal(r), id, in, wr)
		return err
	})
}
