package server

import (
	"encoding/json"
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// smsInboundBody is the body of POST /v1/sms/inbound: the input and
// the write's optional body key, in one decode.
type smsInboundBody struct {
	model.SMSInboundInput
	bodyKey
}

// handleSMSInbound takes an SMS the gateway received (POST /v1/sms/inbound, body {from,
// body}). A reply that moves a mission answers 200 with the inbound record and the
// mission. A refused one is recorded all the same: its transaction commits (with its
// Idempotency-Key, so a replay does not record it twice) and its error is the answer,
// in the contract's envelope.
func (s *Server) handleSMSInbound(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[smsInboundBody](r)
	if err != nil {
		return err
	}
	key, err := s.idempotencyKey(r, body)
	if err != nil {
		return err
	}
	reqID := requestID(r)
	wr := &model.Write{Key: key, Render: func(v any) (model.Reply, error) {
		rc := v.(model.SMSReceipt)
		if rc.Refusal != nil {
			return errorReply(rc.Refusal, reqID)
		}
		b, err := render(rc.Result, reqID)
		return model.Reply{Status: http.StatusOK, Body: b, RequestID: reqID}, err
	}}
	_, refusal, err := s.eng.ReceiveSMS(r.Context(), principal(r), in.SMSInboundInput, wr)
	if err != nil {
		return err
	}
	if st := state(r); st != nil && refusal != nil {
		st.errKind = refusal.Kind
	}
	writeReply(w, wr.Reply)
	return nil
}

// errorReply renders an error as writeError would answer it, for a refusal whose
// transaction commits.
func errorReply(e *model.Error, reqID string) (model.Reply, error) {
	status, ok := statusOf[e.Kind]
	if !ok || status >= http.StatusInternalServerError {
		return model.Reply{}, e
	}
	b, err := json.Marshal(errorBody{Error: e.Kind, Message: e.Msg, Field: e.Field, RequestID: reqID})
	return model.Reply{Status: status, Body: b, RequestID: reqID}, err
}

// handleListSMSOutbound lists the SMS the tenant sent, newest first (GET /v1/sms/outbound).
func (s *Server) handleListSMSOutbound(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	ms, next, err := s.eng.SMSOutbounds(r.Context(), principal(r), page)
	if err != nil {
		return err
	}
	writeList(w, r, ms, next)
	return nil
}
