package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

func (s *Server) handleTenantMe(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	t, err := s.eng.TenantOf(r.Context(), principal(r))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, t)
}

func (s *Server) handleDispatchSettings(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[model.DispatchSettingsInput](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, func(tx model.Tx) (any, error) {
		return s.eng.UpdateDispatchSettings(tx, principal(r), in)
	})
}

func (s *Server) handleCreateUser(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[model.CreateUserInput](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusCreated, func(tx model.Tx) (any, error) {
		return s.eng.CreateUser(tx, principal(r), in)
	})
}

func (s *Server) handleListUsers(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	users, next, err := s.eng.Users(r.Context(), principal(r), page)
	if err != nil {
		return err
	}
	writeList(w, r, users, next)
	return nil
}

func (s *Server) handleUpdateUser(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, in, err := decodeBody[model.UpdateUserInput](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, func(tx model.Tx) (any, error) {
		return s.eng.UpdateUser(tx, principal(r), ps.ByName("id"), in)
	})
}
