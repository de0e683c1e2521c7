package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

func (s *Server) handleGetRetention(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	out, err := s.eng.Retention(r.Context(), principal(r))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, out)
}

// retentionBody is the body of PATCH /v1/tenant/retention: the input and
// the write's optional body key, in one decode.
type retentionBody struct {
	model.RetentionInput
	bodyKey
}

func (s *Server) handleUpdateRetention(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[retentionBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.UpdateRetention(r.Context(), principal(r), in.RetentionInput, wr)
		return err
	})
}
