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
	key, err := s.idempotencyKey(r, body)
	if err != nil {
		return err
	}
	// A dispatch is 201; a dispatch request to a site (a central node) 202.
	created, accepted := renderAs(r, http.StatusCreated, nil), renderAs(r, http.StatusAccepted, nil)
	wr := &model.Write{Key: key, Render: func(v any) (model.Reply, error) {
		if _, ok := v.(*model.DispatchRequest); ok {
			return accepted(v)
		}
		return created(v)
	}}
	if _, err := s.eng.DispatchOrRequest(r.Context(), principal(r), in.DispatchInput, wr); err != nil {
		return err
	}
	writeReply(w, wr.Reply)
	return nil
}

// handleDispatchRequest answers GET /v1/dispatch-requests/:id.
func (s *Server) handleDispatchRequest(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	req, err := s.eng.DispatchRequest(r.Context(), principal(r), ps.ByName("id"))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, req)
}
