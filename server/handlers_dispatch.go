package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

func (s *Server) handleDispatch(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[model.DispatchInput](r)
	if err != nil {
		return err
	}
	if err := in.Validate(); err != nil {
		return err // refused before the transaction: nothing is written
	}
	return s.write(w, r, body, http.StatusCreated, nil, func(wr *model.Write) error {
		_, err := s.eng.DispatchTeam(r.Context(), principal(r), in, wr)
		return err
	})
}
