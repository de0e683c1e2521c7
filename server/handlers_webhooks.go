package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// webhookBody is the body of POST /v1/webhooks: the input and
// the write's optional body key, in one decode.
type webhookBody struct {
	model.WebhookInput
	bodyKey
}

func (s *Server) handleCreateWebhook(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[webhookBody](r)
	if err != nil {
		return err
	}
	if err := s.eng.CheckWebhookInput(r.Context(), &in.WebhookInput); err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusCreated, nil, func(wr *model.Write) error {
		_, err := s.eng.CreateWebhook(r.Context(), principal(r), in.WebhookInput, wr)
		return err
	})
}

func (s *Server) handleListWebhooks(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	hooks, next, err := s.eng.Webhooks(r.Context(), principal(r), page)
	if err != nil {
		return err
	}
	writeList(w, r, hooks, next)
	return nil
}

func (s *Server) handleGetWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	wh, err := s.eng.Webhook(r.Context(), principal(r), ps.ByName("id"))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, wh)
}

// webhookPatchBody is the body of PATCH /v1/webhooks/:id: the input and
// the write's optional body key, in one decode.
type webhookPatchBody struct {
	model.WebhookPatch
	bodyKey
}

func (s *Server) handleUpdateWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, in, err := decodeBody[webhookPatchBody](r)
	if err != nil {
		return err
	}
	if err := s.eng.CheckWebhookPatch(r.Context(), &in.WebhookPatch); err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.UpdateWebhook(r.Context(), principal(r), ps.ByName("id"), in.WebhookPatch, wr)
		return err
	})
}

// handleTestWebhook queues a webhook.test message: 202, since the call is made after
// commit by the scheduler; its outcome is in the subscription's deliveries. The body, if
// any, is ignored (but for the idempotency fingerprint).
func (s *Server) handleTestWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, err := readBody(r, maxBody)
	if err != nil {
		return err
	}
	return s.write(w, r, rawBody(body), http.StatusAccepted, nil, func(wr *model.Write) error {
		_, err := s.eng.SendTestWebhook(r.Context(), principal(r), ps.ByName("id"), wr)
		return err
	})
}

func (s *Server) handleDeleteWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	return s.write(w, r, nil, http.StatusOK, deletedView, func(wr *model.Write) error {
		_, err := s.eng.DeleteWebhook(r.Context(), principal(r), ps.ByName("id"), wr)
		return err
	})
}

func (s *Server) handleWebhookDeliveries(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	attempts, next, err := s.eng.WebhookDeliveries(r.Context(), principal(r), ps.ByName("id"), page)
	if err != nil {
		return err
	}
	writeList(w, r, attempts, next)
	return nil
}
