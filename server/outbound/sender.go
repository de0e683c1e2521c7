// Package outbound holds the calls the node makes to the world outside: webhooks and SMS
// over HTTP (HTTPSender), account mail over SMTP (SMTPMailer) and the push to an upstream
// node (UpstreamHTTP). Each implements a port of engine/model; cli wires them into the
// engine. It imports engine/model and engine/netguard, never engine or server
// (docs/decisions/0089-server-network-adapters.md).
package outbound

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/netguard"
)

// DefaultSendTimeout is the time limit of one webhook or SMS attempt.
const DefaultSendTimeout = 15 * time.Second

// MaxConnsPerReceiver bounds the connections, and so the calls in flight, to one
// receiver (host and port): more deliveries in flight keep up with ingest, and this
// bound keeps one subscriber from taking them all or being flooded.
const MaxConnsPerReceiver = 32

// maxRetryAfter caps the delay a receiver may ask for with Retry-After.
const maxRetryAfter = 24 * time.Hour

// maxResponseRead is how much of a response body is read (and discarded).
const maxResponseRead = 64 << 10

// ErrNoSMSGateway is the error of SendSMS on a node started without --sms-gateway.
var ErrNoSMSGateway = model.Errorf(model.KindUnavailable, "no SMS gateway")

// HTTPSenderOptions configures an HTTPSender.
type HTTPSenderOptions struct {
	// Policy says which addresses webhooks may reach; it is checked at connect time.
	Policy netguard.AddressPolicy
	// SMSGateway is the SMS channel's gateway and its driver (ParseSMSGateway); nil: no
	// SMS channel. The operator configured it, so the address policy does not apply to it
	// and http is allowed.
	SMSGateway *SMSGateway
	// Timeout limits each attempt; 0 means DefaultSendTimeout.
	Timeout time.Duration
	// RootCAs are the trusted authorities; nil means the system pool (which honours
	// SSL_CERT_FILE and SSL_CERT_DIR).
	RootCAs *x509.CertPool
	// UserAgent is sent with every request; empty means "fieldrelay".
	UserAgent string
}

// HTTPSender is the Sender of a node: webhooks over HTTPS through a dialer that enforces
// the address policy, SMS through the configured gateway. It is safe for concurrent use
// and keeps connections alive across calls.
type HTTPSender struct {
	opt     HTTPSenderOptions
	webhook *http.Client
	sms     *http.Client
	// smsState is the gateway's reachability: 0 unknown, 1 up, 2 down (SMSGatewayState).
	smsState atomic.Int32
}

var _ model.Sender = (*HTTPSender)(nil)

// NewHTTPSender returns a sender configured by opt.
func NewHTTPSender(opt HTTPSenderOptions) *HTTPSender {
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultSendTimeout
	}
	if opt.UserAgent == "" {
		opt.UserAgent = "fieldrelay"
	}
	guarded := opt.Policy.Dialer()
	plain := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &HTTPSender{
		opt:     opt,
		webhook: newSendClient(guarded, opt),
		sms:     newSendClient(plain, opt),
	}
}

// newSendClient returns a client that dials through d, never follows redirects and uses
// no proxy (a proxy would make the connect-time check see the proxy's address only).
func newSendClient(d *net.Dialer, opt HTTPSenderOptions) *http.Client {
	tr := &http.Transport{
		Proxy:       nil,
		DialContext: d.DialContext,
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			RootCAs:    opt.RootCAs,
		},
		ForceAttemptHTTP2: true,
		MaxIdleConns:      100,
		// Every connection a receiver may have open stays alive for the next call: a TLS
		// handshake per message halved the delivery
		// rate (docs/decisions/0129-delivery-rate.md).
		MaxIdleConnsPerHost:    MaxConnsPerReceiver,
		MaxConnsPerHost:        MaxConnsPerReceiver,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   opt.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// SendWebhook POSTs m.Body to m.URL, signed with m.Secret. Only a 2xx answer is a
// success; a redirect is not followed and is reported with its status.
func (s *HTTPSender) SendWebhook(ctx context.Context, m model.WebhookMessage) model.SendResult {
	fail := func(err error) model.SendResult { return model.SendResult{Err: err} }
	u, err := url.Parse(m.URL)
	if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Host == "" || u.User != nil {
		return fail(model.Invalid("url", "webhook URL %s is not an https URL without user info", model.Quote(m.URL)))
	}
	sig, err := SignWebhook(m.Secret, m.ID, m.Timestamp, m.Body)
	if err != nil {
		return fail(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.opt.UserAgent)
	req.Header.Set(HeaderWebhookID, m.ID)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(m.Timestamp.Unix(), 10))
	req.Header.Set(HeaderWebhookSignature, sig)
	return s.do(s.webhook, req)
}

// SendSMS hands one SMS to the gateway through its driver: the generic gateway gets POST
// {"to": m.To, "body": m.Body} and a 2xx answer means it accepted the message; SMS Gateway
// for Android and Twilio get their own API (sendAndroid, sendTwilio), which also give the
// message's id and say when a refusal is for good.
func (s *HTTPSender) SendSMS(ctx context.Context, m model.OutboundSMS) (res model.SendResult) {
	g := s.opt.SMSGateway
	if g != nil {
		defer func() { s.noteSMS(res) }()
	}
	switch {
	case g == nil:
		return model.SendResult{Err: ErrNoSMSGateway}
	case g.Driver == DriverAndroid:
		return s.sendAndroid(ctx, g, m)
	case g.Driver == DriverTwilio:
		return s.sendTwilio(ctx, g, m)
	}
	payload, err := json.Marshal(struct {
		To   string `json:"to"`
		Body string `json:"body"`
	}{m.To, m.Body})
	if err != nil {
		return model.SendResult{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.Base.String(), bytes.NewReader(payload))
	if err != nil {
		return model.SendResult{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.opt.UserAgent)
	return s.do(s.sms, req)
}

// SMSAvailable reports whether an SMS gateway is configured.
func (s *HTTPSender) SMSAvailable() bool { return s.opt.SMSGateway != nil }

// do sends req and reads the status, the Retry-After of a 429 or 503 and at most
// maxResponseRead bytes of the body.
func (s *HTTPSender) do(c *http.Client, req *http.Request) model.SendResult {
	return s.doRead(c, req, nil)
}

// doJSON sends req to the SMS gateway as do does, and decodes the body of the answer into
// v when it is JSON (a body that is not leaves v as it was: the status says enough).
func (s *HTTPSender) doJSON(req *http.Request, v any) model.SendResult {
	return s.doRead(s.sms, req, v)
}

// doRead is do, decoding the body into v when v is not nil.
func (s *HTTPSender) doRead(c *http.Client, req *http.Request, v any) model.SendResult {
	resp, err := c.Do(req)
	if err != nil {
		return model.SendResult{Err: s.describe(err)}
	}
	// A failure while reading the body does not change the answer already received.
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseRead))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseRead))
	resp.Body.Close()
	if v != nil {
		_ = json.Unmarshal(b, v)
	}
	res := model.SendResult{StatusCode: resp.StatusCode}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		res.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return res
}

// describe makes a client error say what happened: a refused destination, a timeout or
// the transport's own message. The cause stays in the chain for errors.Is.
func (s *HTTPSender) describe(err error) error {
	var ae *model.Error
	if errors.As(err, &ae) && errors.Is(err, netguard.ErrAddressRefused) {
		return &sendError{msg: ae.Msg + " (checked at connect time)", err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &sendError{msg: fmt.Sprintf("timed out (limit %s per attempt): %v", s.opt.Timeout, err), err: err}
	}
	return err
}

// sendError gives a clearer message to an error while keeping it in the chain.
type sendError struct {
	msg string
	err error
}

func (e *sendError) Error() string { return e.msg }
func (e *sendError) Unwrap() error { return e.err }

// ParseRetryAfter reads a Retry-After header value, seconds or an HTTP date, as a delay
// from now: 0 when absent, invalid or past, at most 24 hours.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter // only a number too large to parse fails here
		}
		return time.Duration(secs) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	d := t.Sub(now)
	switch {
	case d < 0:
		return 0
	case d > maxRetryAfter:
		return maxRetryAfter
	}
	return d
}
