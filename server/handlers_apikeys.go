package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

func (s *Server) handleListAPIKeys(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	keys, next, err := s.eng.ListAPIKeys(r.Context(), principal(r), page)
	if err != nil {
		return err
	}
	writeList(w, r, keys, next)
	return nil
}

// createAPIKeyBody is the body of POST /v1/tenant/api-keys: the input and
// the write's optional body key, in one decode.
type createAPIKeyBody struct {
	model.CreateAPIKeyInput
	bodyKey
}

func (s *Server) handleCreateAPIKey(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[createAPIKeyBody](r)
	if err != nil {
		return err
	}
	return s.writeNewKey(w, r, body, http.StatusCreated, func(wr *model.Write) error {
		_, err := s.eng.CreateAPIKey(r.Context(), principal(r), in.CreateAPIKeyInput, wr)
		return err
	})
}

// rotateAPIKeyBody is the body of POST /v1/tenant/api-keys/rotate: the input and
// the write's optional body key, in one decode.
type rotateAPIKeyBody struct {
	model.RotateAPIKeyInput
	bodyKey
}

func (s *Server) handleRotateAPIKey(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[rotateAPIKeyBody](r)
	if err != nil {
		return err
	}
	return s.writeNewKey(w, r, body, http.StatusOK, func(wr *model.Write) error {
		_, err := s.eng.RotateAPIKey(r.Context(), principal(r), in.RotateAPIKeyInput, wr)
		return err
	})
}

func (s *Server) handleRevokeAPIKey(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	return s.write(w, r, nil, http.StatusOK, deletedView, func(wr *model.Write) error {
		_, err := s.eng.RevokeAPIKey(r.Context(), principal(r), ps.ByName("id"), wr)
		return err
	})
}

// storedNewKey is what the idempotency record keeps of a new key: everything but the key
// itself (null), which is shown once and never stored.
type storedNewKey struct {
	APIKey               *string       `json:"api_key"`
	Key                  *model.APIKey `json:"key"`
	PreviousKeyExpiresAt *model.Time   `json:"previous_key_expires_at,omitempty"`
}

// writeNewKey is s.write for an answer that shows a new key: the client gets the key
// this once, and a replay of the same Idempotency-Key gets the answer with api_key null.
func (s *Server) writeNewKey(w http.ResponseWriter, r *http.Request, body *reqBody, status int, call func(*model.Write) error) error {
	key, err := s.idempotencyKey(r, body)
	if err != nil {
		return err
	}
	reqID := requestID(r)
	wr := &model.Write{Key: key, Render: func(v any) (model.Reply, error) {
		nk := v.(*model.NewKey)
		shown, err := render(nk, reqID)
		if err != nil {
			return model.Reply{}, err
		}
		stored, err := render(storedNewKey{Key: nk.Key, PreviousKeyExpiresAt: nk.PreviousKeyExpiresAt}, reqID)
		return model.Reply{Status: status, Body: stored, Shown: shown, RequestID: reqID}, err
	}}
	if err := call(wr); err != nil {
		return err
	}
	writeReply(w, wr.Reply)
	return nil
}
