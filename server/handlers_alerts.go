package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// handleListAlerts lists the tenant's alerts, open ones by default, newest first (GET
// /v1/alerts; docs/decisions/0172-shared-alerts.md).
func (s *Server) handleListAlerts(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := model.AlertFilter{Status: q.Get("status"), Kind: q.Get("kind"), EventID: q.Get("event_id")}
	alerts, next, err := s.eng.Alerts(r.Context(), principal(r), f, page)
	if err != nil {
		return err
	}
	writeList(w, r, alerts, next)
	return nil
}

// handleAckAlert records who took an alert (POST /v1/alerts/:id/ack); a second
// acknowledgement answers the first.
func (s *Server) handleAckAlert(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	id := ps.ByName("id")
	body, err := readBody(r, maxBody) // none needed; one sent (an idempotency_key) is read like any write's
	if err != nil {
		return err
	}
	return s.write(w, r, rawBody(body), http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.Ack(r.Context(), principal(r), id, wr)
		return err
	})
}
