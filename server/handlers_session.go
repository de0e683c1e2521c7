package server

import (
	"net/http"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// The console's session (docs/decisions/0118-console-session.md):
// POST /v1/auth/session puts the session in an HttpOnly, SameSite=Strict cookie that only
// POST /v1/auth/refresh receives; refresh answers an access token for it; POST
// /v1/auth/logout ends every session of the user.
const (
	sessionCookie   = "fieldrelay_session"
	sessionPath     = "/v1/auth/refresh"
	sessionAudience = "fieldrelay-console-session"
)

// sessionReply answers POST /v1/auth/session.
type sessionReply struct {
	ExpiresIn int `json:"expires_in"`
}

// loggedOut answers POST /v1/auth/logout.
type loggedOut struct {
	LoggedOut bool `json:"logged_out"`
}

// noBody reads the body these routes do not use: none, or a JSON object, strict JSON
// like every body (docs/decisions/0080-strict-json.md).
func noBody(r *http.Request) error {
	body, err := readBody(r, maxBody)
	if err != nil {
		return err
	}
	var in struct{}
	return decodeJSON(body, &in)
}

// setSessionCookie sets (or, with an empty value, clears) the session cookie: HttpOnly so
// no script reads it, SameSite=Strict so no other site's page sends it, Secure over TLS,
// and scoped to the one path that reads it.
func setSessionCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: value, Path: sessionPath, MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// handleSession starts a console session for the bearer token of the request: the cookie
// ends when the token does (the login's 8 hours), never later.
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	p := principal(r)
	if p.UserID == "" {
		return model.Errorf(model.KindForbidden, "a console session needs a user's bearer token; an API key has none")
	}
	if err := noBody(r); err != nil {
		return err
	}
	c, err := s.parseToken(bearer(r), "")
	if err != nil {
		return err
	}
	u, err := s.eng.SessionUser(r.Context(), c.TenantID, c.Subject, c.Ver)
	if err != nil {
		return err
	}
	exp := c.ExpiresAt.Time
	value, err := s.signToken(u, exp, sessionAudience)
	if err != nil {
		return err
	}
	left := int(exp.Sub(s.eng.Clock().Now()) / time.Second)
	setSessionCookie(w, r, value, left)
	return writeOne(w, r, http.StatusOK, sessionReply{ExpiresIn: left})
}

// handleRefresh answers an access token for the session in the cookie, until the session's
// end. A request another site started is refused (Sec-Fetch-Site), and so is a session
// that a logout, a password change or a suspension ended; the cookie is then cleared.
func (s *Server) handleRefresh(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return model.Errorf(model.KindForbidden, "a session is refreshed by the console's own pages only")
	}
	if err := noBody(r); err != nil {
		return err
	}
	cookie, err := r.Cookie(sessionCookie)
	if err != nil || cookie.Value == "" {
		return model.Errorf(model.KindUnauthorized, "no console session: log in")
	}
	c, err := s.parseToken(cookie.Value, sessionAudience)
	var u *model.UserAccount
	if err == nil {
		u, err = s.eng.SessionUser(r.Context(), c.TenantID, c.Subject, c.Ver)
	}
	if err != nil {
		setSessionCookie(w, r, "", -1)
		return err
	}
	exp := c.ExpiresAt.Time
	token, err := s.signToken(u, exp, "")
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, loginReply{Token: token,
		ExpiresIn: int(exp.Sub(s.eng.Clock().Now()) / time.Second), User: &u.User})
}

// handleLogout ends every session of the caller's user, in every tab and on every device,
// and clears this browser's cookie.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	p := principal(r)
	if p.UserID == "" {
		return model.Errorf(model.KindForbidden, "only a logged-in user can log out; an API key has no session")
	}
	if err := noBody(r); err != nil {
		return err
	}
	if err := s.eng.Logout(r.Context(), p); err != nil {
		return err
	}
	setSessionCookie(w, r, "", -1)
	return writeOne(w, r, http.StatusOK, loggedOut{LoggedOut: true})
}
