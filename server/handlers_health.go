package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

type health struct {
	Status string `json:"status"`
	// SMSGateway is the SMS gateway's reachability (readyz only, with a gateway): it says,
	// but does not decide, readiness.
	SMSGateway string `json:"sms_gateway,omitempty"`
	// Notifications says whether the notifications of the other processes of a central
	// tier reach this one (readyz only, with --database): "up", or "down" with the reason
	// in NotificationsReason, when the caches are bypassed. It says, but does not decide,
	// readiness (docs/decisions/0220-notifications-fail-closed.md).
	Notifications       string `json:"notifications,omitempty"`
	NotificationsReason string `json:"notifications_reason,omitempty"`
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return writeOne(w, r, http.StatusOK, health{Status: "ok"})
}

// handleReadyz answers ready when the scheduler runs, the store answers a read and its
// disk has room for writes; 503 unavailable otherwise (starting, shutting down, store
// closed, disk full), with the reason in the message.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if !s.eng.SchedulerRunning() {
		return model.Errorf(model.KindUnavailable, "the scheduler is not running")
	}
	if err := s.eng.View(r.Context(), func(model.Tx) error { return nil }); err != nil {
		return &model.Error{Kind: model.KindUnavailable, Msg: "the store is not available", Err: err}
	}
	if sp, ok := s.eng.Space(); ok && sp.Full {
		return model.DiskFull(nil)
	}
	h := health{Status: "ready", SMSGateway: s.eng.SMSGatewayState()}
	if down, ok := s.eng.Notifications(); ok {
		h.Notifications = "up"
		if down != "" {
			h.Notifications, h.NotificationsReason = "down", down
		}
	}
	return writeOne(w, r, http.StatusOK, h)
}
