package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// dispatchBody is the body of POST /v1/teams/dispatch: the input and the write's
// optional body key, in one decode.
type dispatchBody struct {
	model.DispatchInput
	bodyKey
}

func (s *Server) handleDispatch(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[dispatchBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusCreated, nil, func(wr *model.Write) error {
		_, err := s.eng.DispatchTeam(r.Context(), principal(r), in.DispatchInput, wr)
		return err
	})
}
