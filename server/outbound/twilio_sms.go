package outbound

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// twilioAnswer is the part of Twilio's answers the driver reads: a created message's sid,
// or an error's code and message.
type twilioAnswer struct {
	SID     string `json:"sid"`
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// sendTwilio creates one message with Twilio's Messages resource: POST
// <base>/2010-04-01/Accounts/<sid>/Messages.json, form-encoded To, Body and From (or
// MessagingServiceSid), basic auth with the account SID and auth token, and the tenant's
// status callback when --sms-gateway names the node's URL (status_callback=). Twilio
// answers 201 with the message's sid; an error carries Twilio's own code (21211: an
// invalid To).
func (s *HTTPSender) sendTwilio(ctx context.Context, g *SMSGateway, m model.OutboundSMS) model.SendResult {
	form := url.Values{"To": {m.To}, "Body": {m.Body}}
	if g.StatusCallback != "" {
		form.Set("StatusCallback", g.StatusCallback+"/v1/sms/twilio/"+url.PathEscape(m.TenantID)+"/status")
	}
	if g.MessagingService != "" {
		form.Set("MessagingServiceSid", g.MessagingService)
	} else {
		form.Set("From", g.From)
	}
	endpoint := g.Base.String() + "/2010-04-01/Accounts/" + url.PathEscape(g.User) + "/Messages.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return model.SendResult{Err: err}
	}
	req.SetBasicAuth(g.User, g.Secret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", s.opt.UserAgent)
	var a twilioAnswer
	res := s.doJSON(req, &a)
	switch {
	case res.OK():
		res.MessageID = a.SID
	case res.Err == nil:
		res.Detail = "Twilio error " + strconv.Itoa(a.Code) + " " + model.Quote(a.Message)
		res.Permanent = refusedForGood(res.StatusCode)
	}
	return res
}
