package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

func (s *Server) handleTenantMe(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	t, err := s.eng.Tenant(r.Context(), principal(r))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, t)
}

// dispatchSettingsBody is the body of PATCH /v1/tenant/dispatch-settings: the input and
// the write's optional body key, in one decode.
type dispatchSettingsBody struct {
	model.DispatchSettingsInput
	bodyKey
}

func (s *Server) handleDispatchSettings(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[dispatchSettingsBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.UpdateDispatchSettings(r.Context(), principal(r), in.DispatchSettingsInput, wr)
		return err
	})
}

// createUserBody is the body of POST /v1/tenant/users: the input and
// the write's optional body key, in one decode.
type createUserBody struct {
	model.CreateUserInput
	bodyKey
}

func (s *Server) handleCreateUser(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[createUserBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusCreated, nil, func(wr *model.Write) error {
		_, err := s.eng.CreateUser(r.Context(), principal(r), in.CreateUserInput, wr)
		return err
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

// updateUserBody is the body of PATCH /v1/tenant/users/:id: the input and
// the write's optional body key, in one decode.
type updateUserBody struct {
	model.UpdateUserInput
	bodyKey
}

func (s *Server) handleUpdateUser(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, in, err := decodeBody[updateUserBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.UpdateUser(r.Context(), principal(r), ps.ByName("id"), in.UpdateUserInput, wr)
		return err
	})
}
