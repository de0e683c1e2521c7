package server

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server/outbound"
	"github.com/julienschmidt/httprouter"
	twilio "github.com/twilio/twilio-go/client"
)

// maxGatewayBody bounds a gateway's webhook: an SMS event is a few hundred bytes.
const maxGatewayBody = 64 << 10

// androidWebhook is the part of an SMS Gateway for Android webhook the node reads.
type androidWebhook struct {
	ID      string `json:"id"`
	Event   string `json:"event"`
	Payload struct {
		MessageID   string `json:"messageId"`
		Message     string `json:"message"`
		PhoneNumber string `json:"phoneNumber"`
		Sender      string `json:"sender"`
		Reason      string `json:"reason"`
	} `json:"payload"`
}

// handleAndroidWebhook takes the webhooks of SMS Gateway for Android (POST
// /v1/sms/android/:tenant_id), registered on the phone by `fieldrelay sms setup`. The
// signature (X-Signature over the body and X-Timestamp, under the tenant's signing key)
// is the credential, and a timestamp outside AndroidWebhookWindow is refused as a replay.
// sms:received is an SMS for the tenant's reply path (ReceiveSMS, as POST
// /v1/sms/inbound): recorded whatever its outcome, answered 200 so that the phone does
// not send it again; the webhook's id is its idempotency key. sms:delivered and sms:failed
// are delivery reports on an SMS the node sent (ReportSMSDelivery; the phone knows it by
// the node's id). Other events are answered 200 and change nothing. Every 200 is the JSON
// {"request_id": …} (docs/decisions/0138-sms-webhooks-200.md).
func (s *Server) handleAndroidWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	tenantID := ps.ByName("tenant_id")
	body, err := readBody(r, maxGatewayBody)
	if err != nil {
		return err
	}
	if g := s.cfg.SMSGateway; g == nil || g.Driver != outbound.DriverAndroid {
		return model.Errorf(model.KindNotFound, "this node's SMS gateway is not SMS Gateway for Android")
	}
	key := engine.SMSWebhookKey(s.smsSecret, tenantID)
	if err := outbound.VerifyAndroidWebhook(key, body, r.Header.Get(outbound.HeaderAndroidTimestamp),
		r.Header.Get(outbound.HeaderAndroidSignature), s.eng.Clock().Now()); err != nil {
		return err
	}
	var hook androidWebhook
	if err := decodeJSON(body, &hook); err != nil {
		return err
	}
	switch hook.Event {
	case "sms:received":
	case "sms:delivered", "sms:failed":
		status := model.SMSDelivered
		if hook.Event == "sms:failed" {
			status = model.SMSFailed
		}
		return s.gatewayReport(w, r, tenantID, outbound.DriverAndroid, model.SMSDeliveryReport{
			GatewayMessageID: hook.Payload.MessageID, Status: status, Reason: hook.Payload.Reason})
	default:
		return writeTaken(w, r)
	}
	from := hook.Payload.PhoneNumber
	if from == "" {
		from = hook.Payload.Sender
	}
	return s.gatewaySMS(w, r, tenantID, outbound.DriverAndroid, hook.ID,
		model.SMSInboundInput{From: from, Body: hook.Payload.Message}, "application/json", takenReply)
}

// takenReply is the answer to a gateway's webhook that the node took: 200 with the
// request id and nothing else, as writeTaken answers.
func takenReply(reqID string) (model.Reply, error) {
	b, err := render(struct{}{}, reqID)
	return model.Reply{Status: http.StatusOK, Body: b, RequestID: reqID}, err
}

// writeTaken answers a gateway's webhook or callback that the node took, whatever it
// changed: 200 {"request_id": …}. The contract has no 204, and every gateway takes any 2xx
// (SMS Gateway for Android sends a webhook again on anything else; Twilio reads no body of
// a status callback).
func writeTaken(w http.ResponseWriter, r *http.Request) error {
	return writeOne(w, r, http.StatusOK, struct{}{})
}

// emptyTwiML is the answer to Twilio's inbound message webhook: nothing to send back.
var emptyTwiML = []byte(`<?xml version="1.0" encoding="UTF-8"?><Response></Response>`)

// handleTwilioWebhook takes Twilio's inbound message webhook (POST
// /v1/sms/twilio/:tenant_id, set as the number's "A message comes in" URL): a form whose
// X-Twilio-Signature is checked with Twilio's own validator under the auth token of
// --sms-gateway, against the URL Twilio called (the scheme and host a TLS proxy forwards
// in X-Forwarded-Proto and X-Forwarded-Host, else the node's own). The SMS goes to the
// tenant's reply path like POST /v1/sms/inbound, recorded whatever its outcome, with
// MessageSid as its idempotency key; the answer is an empty TwiML <Response/> (nothing is
// sent back by SMS).
func (s *Server) handleTwilioWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	form, err := s.twilioForm(r)
	if err != nil {
		return err
	}
	return s.gatewaySMS(w, r, ps.ByName("tenant_id"), outbound.DriverTwilio, form.Get("MessageSid"),
		model.SMSInboundInput{From: form.Get("From"), Body: form.Get("Body")}, "text/xml", twimlReply)
}

// twimlReply is the answer to Twilio's inbound message webhook: 200 with an empty TwiML
// <Response/>.
func twimlReply(reqID string) (model.Reply, error) {
	return model.Reply{Status: http.StatusOK, Body: emptyTwiML, RequestID: reqID}, nil
}

// handleTwilioStatus takes Twilio's status callbacks (POST
// /v1/sms/twilio/:tenant_id/status, asked for by each message when --sms-gateway has
// status_callback=): checked like the inbound webhook, MessageStatus delivered makes the
// SMS delivered, undelivered and failed make it failed (with ErrorCode); the other
// statuses (queued, sending, sent…) change nothing. Answered 200 {"request_id": …}.
func (s *Server) handleTwilioStatus(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	form, err := s.twilioForm(r)
	if err != nil {
		return err
	}
	var status string
	switch form.Get("MessageStatus") {
	case "delivered":
		status = model.SMSDelivered
	case "undelivered", "failed":
		status = model.SMSFailed
	default:
		return writeTaken(w, r)
	}
	reason := ""
	if c := form.Get("ErrorCode"); c != "" {
		reason = "Twilio error " + c
	}
	return s.gatewayReport(w, r, ps.ByName("tenant_id"), outbound.DriverTwilio, model.SMSDeliveryReport{
		GatewayMessageID: form.Get("MessageSid"), Status: status, Reason: reason})
}

// gatewayReport applies a gateway's delivery report in its name and answers 200. A report
// on an SMS the tenant did not send (or no longer knows) is logged and answered the same:
// the gateway can do nothing about it.
func (s *Server) gatewayReport(w http.ResponseWriter, r *http.Request, tenantID, driver string, rep model.SMSDeliveryReport) error {
	p, err := s.eng.SMSGatewayPrincipal(r.Context(), tenantID, driver)
	if err != nil {
		return err
	}
	if _, err := s.eng.ReportSMSDelivery(r.Context(), p, rep); model.IsKind(err, model.KindNotFound) {
		s.log.Info("sms: a delivery report names no SMS of the tenant", "request_id", requestID(r), "gateway", driver,
			"gateway_message_id", model.Quote(rep.GatewayMessageID))
	} else if err != nil {
		return err
	}
	return writeTaken(w, r)
}

// twilioForm reads a request of Twilio to the node: a form of at most maxGatewayBody
// bytes whose X-Twilio-Signature Twilio's own validator accepts under the auth token of
// --sms-gateway (unauthorized otherwise), on a node whose gateway is Twilio (not_found
// otherwise).
func (s *Server) twilioForm(r *http.Request) (url.Values, error) {
	g := s.cfg.SMSGateway
	if g == nil || g.Driver != outbound.DriverTwilio {
		return nil, model.Errorf(model.KindNotFound, "this node's SMS gateway is not Twilio")
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, model.Errorf(model.KindUnsupportedMediaType, "Twilio's requests are sent with Content-Type: application/x-www-form-urlencoded")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxGatewayBody+1))
	if err != nil {
		return nil, model.Errorf(model.KindInvalidJSON, "the body could not be read")
	}
	if len(body) > maxGatewayBody {
		return nil, tooLarge(maxGatewayBody)
	}
	v := twilio.NewRequestValidator(g.Secret)
	if !v.ValidateBody(calledURL(r), body, r.Header.Get("X-Twilio-Signature")) {
		return nil, model.Errorf(model.KindUnauthorized, "the X-Twilio-Signature header does not match the request")
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, model.Invalid("body", "the form could not be read")
	}
	return form, nil
}

// calledURL is the URL a gateway called to reach r, as it signed it.
func calledURL(r *http.Request) string {
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	if h := r.Header.Get("X-Forwarded-Host"); h != "" {
		host = h
	}
	return scheme + "://" + host + r.URL.RequestURI()
}

// gatewaySMS hands an SMS a gateway's webhook delivered to the tenant's reply path, in the
// gateway's name, and answers what reply renders (a body of contentType): the gateway is
// told the message arrived whether or not the reply moved a mission (the outcome is in the
// log), since a refusal would only make it send the message again. eventID, the gateway's id
// of the message, is the idempotency key: a webhook sent twice is recorded once.
func (s *Server) gatewaySMS(w http.ResponseWriter, r *http.Request, tenantID, driver, eventID string,
	in model.SMSInboundInput, contentType string, reply func(reqID string) (model.Reply, error)) error {
	p, err := s.eng.SMSGatewayPrincipal(r.Context(), tenantID, driver)
	if err != nil {
		return err
	}
	wr := &model.Write{Render: func(any) (model.Reply, error) { return reply(requestID(r)) }}
	if eventID != "" {
		if err := engine.ValidateIdempotencyKey("id", eventID); err != nil {
			return err
		}
		fp, err := json.Marshal(in)
		if err != nil {
			return err
		}
		wr.Key = &model.IdempotencyKey{Route: "POST /v1/sms/" + driver, Key: eventID,
			Fingerprint: engine.Fingerprint(s.fpSecret, fp), RawFingerprint: engine.Fingerprint(s.fpSecret, fp)}
	}
	_, refusal, err := s.eng.ReceiveSMS(r.Context(), p, in, wr)
	if err != nil {
		return err
	}
	if st := state(r); st != nil && refusal != nil {
		st.errKind = refusal.Kind
	}
	if refusal != nil {
		s.log.Info("sms: a gateway's SMS was recorded and refused", "request_id", requestID(r), "gateway", driver,
			"error", refusal.Kind, "message", refusal.Msg)
	}
	if contentType == "application/json" {
		reply := wr.Reply
		if reply.Replayed && len(reply.Body) == 0 {
			// Stored by a node that answered 204: answered as taken now, its request id kept.
			reply.Status, reply.Body = http.StatusOK, withRequestID([]byte("{}"), reply.RequestID)
		}
		writeReply(w, reply)
		return nil
	}
	if wr.Reply.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(wr.Reply.Status)
	_, _ = w.Write(wr.Reply.Body)
	return nil
}
