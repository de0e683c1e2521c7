package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// loginReply answers POST /v1/auth/login.
type loginReply struct {
	Token     string      `json:"token"`
	ExpiresIn int         `json:"expires_in"`
	User      *model.User `json:"user"`
}

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in model.LoginInput
	if err := s.decode(r, &in); err != nil {
		return err
	}
	acct, err := s.eng.Login(r.Context(), in)
	if err != nil {
		return err
	}
	token, err := s.issueToken(acct)
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, loginReply{Token: token,
		ExpiresIn: int(engine.TokenLifetime.Seconds()), User: &acct.User})
}

// changePasswordBody is the body of POST /v1/auth/change-password: the input and
// the write's optional body key, in one decode.
type changePasswordBody struct {
	model.ChangePasswordInput
	bodyKey
}

func (s *Server) handleChangePassword(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[changePasswordBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.ChangePassword(r.Context(), principal(r), in.ChangePasswordInput, wr)
		return err
	})
}

// accepted answers forgot-password, whatever the email.
type accepted struct {
	Accepted bool   `json:"accepted"`
	Message  string `json:"message"`
}

func (s *Server) handleForgotPassword(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in model.ForgotPasswordInput
	if err := s.decode(r, &in); err != nil {
		return err
	}
	if err := s.eng.ForgotPassword(r.Context(), in); err != nil {
		return err
	}
	return writeOne(w, r, http.StatusAccepted, accepted{true,
		"if an account has this email, a reset token is on its way; it is valid for one hour"})
}

func (s *Server) handleResetPassword(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in model.ResetPasswordInput
	if err := s.decode(r, &in); err != nil {
		return err
	}
	out, err := s.eng.ResetPassword(r.Context(), in)
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, out)
}

func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in model.VerifyInput
	if err := s.decode(r, &in); err != nil {
		return err
	}
	out, err := s.eng.VerifyAccount(r.Context(), in)
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, out)
}

// decode reads a request body of at most 1 MiB into v.
func (s *Server) decode(r *http.Request, v any) error {
	body, err := readBody(r, maxBody)
	if err != nil {
		return err
	}
	return decodeJSON(body, v)
}
