package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

func (s *Server) handleListMissions(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	mq := model.MissionQuery{Status: q.Get("status"), TeamID: q.Get("team_id"), MemberID: q.Get("member_id"),
		EventID: q.Get("event_id"), Origin: q.Get("origin")}
	missions, next, err := s.eng.Missions(r.Context(), principal(r), mq, page)
	if err != nil {
		return err
	}
	writeList(w, r, missions, next)
	return nil
}

func (s *Server) handleGetMission(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	m, err := s.eng.Mission(r.Context(), principal(r), ps.ByName("id"))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, m)
}

// missionStatusBody is the body of PATCH /v1/missions/:id/status: the input and the
// write's optional body key, in one decode.
type missionStatusBody struct {
	model.MissionStatusInput
	bodyKey
}

// handleMissionStatus moves a mission (PATCH /v1/missions/:id/status). The route table
// admits missions:manage or missions:receive; the engine keeps the rule that is no
// permission (a field operator moves only its own teams' missions).
func (s *Server) handleMissionStatus(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, in, err := decodeBody[missionStatusBody](r)
	if err != nil {
		return err
	}
	id := ps.ByName("id")
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.UpdateMissionStatus(r.Context(), principal(r), id, in.MissionStatusInput, engine.MoveSourceAPI, nil, wr)
		return err
	})
}

// missionMessageBody is the body of POST /v1/missions/:id/messages with its body key.
type missionMessageBody struct {
	model.MissionMessageInput
	bodyKey
}

// handlePostMissionMessage writes a message on a mission (POST /v1/missions/:id/messages):
// 201 with the message. The route admits missions:manage or missions:receive; the engine
// keeps a field operator to its own teams' missions.
func (s *Server) handlePostMissionMessage(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, in, err := decodeBody[missionMessageBody](r)
	if err != nil {
		return err
	}
	id := ps.ByName("id")
	return s.write(w, r, body, http.StatusCreated, nil, func(wr *model.Write) error {
		_, err := s.eng.PostMissionMessage(r.Context(), principal(r), id, in.MissionMessageInput, wr)
		return err
	})
}

// handleListMissionMessages lists a mission's messages, oldest first (GET
// /v1/missions/:id/messages): all of them (a mission holds at most
// engine.MaxMissionMessages).
func (s *Server) handleListMissionMessages(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	msgs, err := s.eng.MissionMessages(r.Context(), principal(r), ps.ByName("id"))
	if err != nil {
		return err
	}
	writeList(w, r, msgs, "")
	return nil
}

// handleMissionCrew says whether the team's devices know the mission's latest change
// (GET /v1/missions/:id/crew).
func (s *Server) handleMissionCrew(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	c, err := s.eng.MissionCrew(r.Context(), principal(r), ps.ByName("id"))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, c)
}
