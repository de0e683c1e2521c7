package outbound

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Headers of SMS Gateway for Android's signed webhooks.
const (
	HeaderAndroidSignature = "X-Signature"
	HeaderAndroidTimestamp = "X-Timestamp"
)

// AndroidWebhookWindow is how far X-Timestamp may be from now: an older (or later)
// webhook is refused as a replay.
const AndroidWebhookWindow = 5 * time.Minute

// androidMessage is the body of SMS Gateway for Android's POST /message.
type androidMessage struct {
	// ID is the node's id of the message: the phone's webhooks name it.
	ID           string      `json:"id,omitempty"`
	TextMessage  androidText `json:"textMessage"`
	PhoneNumbers []string    `json:"phoneNumbers"`
	// WithDeliveryReport asks the phone for the network's delivery report.
	WithDeliveryReport bool `json:"withDeliveryReport"`
}

type androidText struct {
	Text string `json:"text"`
}

// androidState is the part of the gateway's answer the driver reads: the message id, and
// the error message of a refusal.
type androidState struct {
	ID      string `json:"id"`
	State   string `json:"state"`
	Message string `json:"message"`
}

// sendAndroid hands one SMS to the phone's local server: POST <base>/message with basic
// auth, the message's id on the node as its id (the phone's sms:delivered and sms:failed
// webhooks name it). The phone answers 202 with the message's id and state.
func (s *HTTPSender) sendAndroid(ctx context.Context, g *SMSGateway, m model.OutboundSMS) model.SendResult {
	payload, err := json.Marshal(androidMessage{ID: m.ID, TextMessage: androidText{Text: m.Body}, PhoneNumbers: []string{m.To}, WithDeliveryReport: true})
	if err != nil {
		return model.SendResult{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.Base.String()+"/message", bytes.NewReader(payload))
	if err != nil {
		return model.SendResult{Err: err}
	}
	req.SetBasicAuth(g.User, g.Secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.opt.UserAgent)
	var st androidState
	res := s.doJSON(req, &st)
	if res.OK() {
		res.MessageID = st.ID
	} else if res.Err == nil {
		res.Detail = model.Quote(st.Message)
		res.Permanent = refusedForGood(res.StatusCode)
	}
	return res
}

// refusedForGood reports an answer of a gateway that refuses the message itself (an
// invalid number, a text it cannot send): sending it again would change nothing. A
// refusal of our credentials (401, 403) or of the path (404) is a configuration the
// operator may mend, so it is retried like any other failure.
func refusedForGood(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity
}

// SignAndroidWebhook returns the X-Signature of a webhook of SMS Gateway for Android: the
// hex HMAC-SHA256, under the signing key, of the raw body followed by the X-Timestamp
// value (Unix seconds, as written in the header).
func SignAndroidWebhook(key string, body []byte, timestamp string) string {
	return hex.EncodeToString(androidMAC(key, body, timestamp))
}

// androidMAC is the HMAC-SHA256 of a webhook under key: the raw body, then the timestamp.
func androidMAC(key string, body []byte, timestamp string) []byte {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(body)
	m.Write([]byte(timestamp))
	return m.Sum(nil)
}

// VerifyAndroidWebhook checks a webhook of SMS Gateway for Android: its signature under
// key, and a timestamp within AndroidWebhookWindow of now (a replay of an old webhook
// fails). Its errors are unauthorized and say which check failed.
func VerifyAndroidWebhook(key string, body []byte, timestamp, signature string, now time.Time) error {
	secs, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return model.Errorf(model.KindUnauthorized, "the %s header must be Unix seconds", HeaderAndroidTimestamp)
	}
	got, err := hex.DecodeString(signature)
	if err != nil || !hmac.Equal(got, androidMAC(key, body, timestamp)) {
		return model.Errorf(model.KindUnauthorized, "the %s header does not match the body", HeaderAndroidSignature)
	}
	if d := now.Sub(time.Unix(secs, 0)); d > AndroidWebhookWindow || d < -AndroidWebhookWindow {
		return model.Errorf(model.KindUnauthorized, "the webhook's %s is more than %s from now: refused as a replay", HeaderAndroidTimestamp, AndroidWebhookWindow)
	}
	return nil
}

// RegisterAndroidWebhook registers (or replaces: the id is fixed) a webhook of event on
// the phone's local server: POST <base>/webhooks {id, url, event} with basic auth. The
// phone answers 201 with the webhook; any other answer is an unavailable error quoting
// what it said.
func RegisterAndroidWebhook(ctx context.Context, g *SMSGateway, id, hookURL, event string) error {
	if g == nil || g.Driver != DriverAndroid {
		return model.Invalid("sms-gateway", "--sms-gateway is not SMS Gateway for Android (android+http(s)://USER:PASS@HOST:PORT)")
	}
	payload, err := json.Marshal(map[string]string{"id": id, "url": hookURL, "event": event})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.Base.String()+"/webhooks", bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.SetBasicAuth(g.User, g.Secret)
	req.Header.Set("Content-Type", "application/json")
	s := NewHTTPSender(HTTPSenderOptions{SMSGateway: g})
	var st androidState
	res := s.doJSON(req, &st)
	switch {
	case res.Err != nil:
		return model.Errorf(model.KindUnavailable, "the phone %s did not answer: %v", g, res.Err)
	case !res.OK():
		return model.Errorf(model.KindUnavailable, "the phone %s refused the webhook: HTTP %d %s", g, res.StatusCode, model.Quote(st.Message))
	}
	return nil
}
