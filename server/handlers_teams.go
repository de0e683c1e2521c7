package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// teamBody is the body of POST /v1/teams: the input and
// the write's optional body key, in one decode.
type teamBody struct {
	model.TeamInput
	bodyKey
}

func (s *Server) handleCreateTeam(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[teamBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusCreated, nil, func(wr *model.Write) error {
		_, err := s.eng.CreateTeam(r.Context(), principal(r), in.TeamInput, wr)
		return err
	})
}

// teamPatchBody is the body of PATCH /v1/teams/:id: the input and
// the write's optional body key, in one decode.
type teamPatchBody struct {
	model.TeamPatch
	bodyKey
}

func (s *Server) handleUpdateTeam(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, in, err := decodeBody[teamPatchBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.UpdateTeam(r.Context(), principal(r), ps.ByName("id"), in.TeamPatch, wr)
		return err
	})
}

// memberBody is the body of POST /v1/teams/:id/members: the input and
// the write's optional body key, in one decode.
type memberBody struct {
	model.MemberInput
	bodyKey
}

// handleAddTeamMember answers the team with its new member.
func (s *Server) handleAddTeamMember(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, in, err := decodeBody[memberBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusCreated, nil, func(wr *model.Write) error {
		_, err := s.eng.AddTeamMember(r.Context(), principal(r), ps.ByName("id"), in.MemberInput, wr)
		return err
	})
}

// locationBody is the body of PATCH /v1/teams/:id/members/:memberId/location: the input and
// the write's optional body key, in one decode.
type locationBody struct {
	model.LocationInput
	bodyKey
}

// handleUpdateMemberLocation is routed as authenticated: the engine decides between
// teams:manage and location:self (the caller's own member record).
func (s *Server) handleUpdateMemberLocation(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, in, err := decodeBody[locationBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.UpdateMemberLocation(r.Context(), principal(r), ps.ByName("id"), ps.ByName("memberId"), in.LocationInput, wr)
		return err
	})
}

// handleListTeams answers GET /v1/teams, filtered by ?status, ?zone_code and ?vertical.
func (s *Server) handleListTeams(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := model.TeamFilter{Status: q.Get("status"), ZoneCode: q.Get("zone_code"), Vertical: q.Get("vertical")}
	teams, next, err := s.eng.Teams(r.Context(), principal(r), f, page)
	if err != nil {
		return err
	}
	writeList(w, r, teams, next)
	return nil
}

func (s *Server) handleGetTeam(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	t, err := s.eng.Team(r.Context(), principal(r), ps.ByName("id"))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, t)
}
