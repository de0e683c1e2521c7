package outbound

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// States of the SMS gateway (HTTPSender.SMSGatewayState).
const (
	SMSGatewayUnknown = "unknown"
	SMSGatewayUp      = "up"
	SMSGatewayDown    = "down"
)

// SMSProbeEvery is how often WatchSMS probes SMS Gateway for Android, and Twilio while it
// is down.
const SMSProbeEvery = 30 * time.Second

var _ model.SMSHealth = (*HTTPSender)(nil)

// SMSGatewayState says whether the SMS gateway was reachable at the latest probe or
// call: up, down (no answer, or a 5xx), or unknown (nothing tried yet, or no gateway).
func (s *HTTPSender) SMSGatewayState() string {
	switch s.smsState.Load() {
	case 1:
		return SMSGatewayUp
	case 2:
		return SMSGatewayDown
	}
	return SMSGatewayUnknown
}

// noteSMS records what a call or probe of the SMS gateway says of its reachability: any
// answer below 500 means it is up.
func (s *HTTPSender) noteSMS(res model.SendResult) {
	if res.Err != nil || res.StatusCode >= http.StatusInternalServerError {
		s.smsState.Store(2)
	} else {
		s.smsState.Store(1)
	}
}

// ProbeSMS asks the gateway whether it is reachable, and records the answer: SMS Gateway
// for Android's GET /health (a 2xx whose status is not "fail"), Twilio's account resource
// (GET /2010-04-01/Accounts/<sid>.json). The generic gateway has no probe (nil, nothing
// recorded): its calls alone say.
func (s *HTTPSender) ProbeSMS(ctx context.Context) error {
	g := s.opt.SMSGateway
	var target string
	switch {
	case g == nil || g.Driver == DriverGeneric:
		return nil
	case g.Driver == DriverAndroid:
		target = g.Base.String() + "/health"
	default:
		target = g.Base.String() + "/2010-04-01/Accounts/" + url.PathEscape(g.User) + ".json"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(g.User, g.Secret)
	req.Header.Set("User-Agent", s.opt.UserAgent)
	var health struct {
		Status string `json:"status"`
	}
	res := s.doJSON(req, &health)
	if res.Err == nil && res.OK() && health.Status == "fail" {
		res.StatusCode = http.StatusServiceUnavailable // the phone says it cannot send
	}
	s.noteSMS(res)
	if res.Err != nil {
		return res.Err
	}
	if !res.OK() {
		return model.Errorf(model.KindUnavailable, "the SMS gateway %s answered HTTP %d", g, res.StatusCode)
	}
	return nil
}

// WatchSMS probes the gateway until ctx ends: SMS Gateway for Android every interval,
// Twilio only while its latest call or probe failed (a paid API is not polled). It returns
// when ctx ends.
func (s *HTTPSender) WatchSMS(ctx context.Context, interval time.Duration) {
	g := s.opt.SMSGateway
	if g == nil || g.Driver == DriverGeneric {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if g.Driver == DriverAndroid || s.SMSGatewayState() == SMSGatewayDown {
			_ = s.ProbeSMS(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
