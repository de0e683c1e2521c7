package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// handleScore ranks the tenant's teams for an event (POST /v1/teams/dispatch/score). It
// only reads, so it takes no Idempotency-Key.
func (s *Server) handleScore(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	in, err := decodeInput[model.ScoreInput](r)
	if err != nil {
		return err
	}
	scores, err := s.eng.ScoreTeams(r.Context(), principal(r), in)
	if err != nil {
		return err
	}
	writeAppendedList(w, r, scores, "")
	return nil
}
