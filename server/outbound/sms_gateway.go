package outbound

import (
	"net"
	"net/url"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Drivers of the SMS channel, named by the scheme of --sms-gateway.
const (
	// DriverGeneric POSTs {"to", "body"} to an http(s) URL: the way to plug any other gateway.
	DriverGeneric = "generic"
	// DriverAndroid speaks to SMS Gateway for Android's local server (android+http(s)://).
	DriverAndroid = "android"
	// DriverTwilio speaks to Twilio's Messages resource (twilio://).
	DriverTwilio = "twilio"
)

// SMSGateway is a parsed --sms-gateway: the driver, where it sends, and its credentials.
// Its String never shows a password or token (docs/decisions/0120-sms-gateway-drivers.md).
type SMSGateway struct {
	// Driver is DriverGeneric, DriverAndroid or DriverTwilio.
	Driver string
	// Base is the URL requests go to, without user info or driver query: the generic
	// gateway's own URL, the phone's local server, or Twilio's API host.
	Base *url.URL
	// User and Secret are the basic-auth pair: the phone's local-server user and password,
	// or Twilio's account SID and auth token. Secret is never logged.
	User, Secret string
	// From or MessagingService is Twilio's sender: a number in E.164, or a Messaging
	// Service SID.
	From, MessagingService string
	// StatusCallback is the node's base URL as Twilio reaches it (status_callback=): each
	// message then asks Twilio to post its delivery status to the tenant's
	// /v1/sms/twilio/<tenant_id>/status. Empty: no status callbacks.
	StatusCallback string
}

// ParseSMSGateway reads --sms-gateway: `none` or empty (nil: no SMS channel), an http(s)
// URL (the generic gateway), android+http(s)://USER:PASS@HOST:PORT[/prefix], or
// twilio://ACCOUNT_SID:AUTH_TOKEN@HOST?from=+E164 (or messaging_service=MG…), with
// status_callback=<the node's base URL> for delivery statuses; Twilio's host
// is api.twilio.com in production, and twilio+http:// reaches a loopback host in plain
// HTTP (a fake Twilio in tests). Its errors are validation_error on sms-gateway and never
// quote the URL, which may hold a secret.
func ParseSMSGateway(s string) (*SMSGateway, error) {
	if s == "" || s == "none" {
		return nil, nil
	}
	bad := func(why string) error {
		return model.Invalid("sms-gateway", "--sms-gateway must be none, an http(s) URL, android+http(s)://USER:PASS@HOST:PORT "+
			"or twilio://ACCOUNT_SID:AUTH_TOKEN@api.twilio.com?from=+E164: %s", why)
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, bad("it is not a URL")
	}
	if u.Host == "" {
		return nil, bad("it names no host")
	}
	g := &SMSGateway{}
	base := *u
	base.User, base.RawQuery, base.Fragment = nil, "", ""
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		// The generic gateway's URL is used as given, query and user info included.
		return &SMSGateway{Driver: DriverGeneric, Base: u}, nil
	case "android+http", "android+https":
		g.Driver = DriverAndroid
		base.Scheme = strings.TrimPrefix(strings.ToLower(u.Scheme), "android+")
		base.Path = strings.TrimSuffix(base.Path, "/")
		if u.RawQuery != "" {
			return nil, bad("the android gateway takes no query")
		}
	case "twilio", "twilio+http":
		g.Driver = DriverTwilio
		base.Scheme, base.Path, base.RawPath = "https", "", ""
		if strings.ToLower(u.Scheme) == "twilio+http" {
			if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return nil, bad("twilio+http reaches a loopback host only (the auth token would cross the network in clear)")
			}
			base.Scheme = "http"
		}
		q := u.Query()
		g.From, g.MessagingService = q.Get("from"), q.Get("messaging_service")
		g.StatusCallback = strings.TrimSuffix(q.Get("status_callback"), "/")
		if cb, err := url.Parse(g.StatusCallback); g.StatusCallback != "" && (err != nil || (cb.Scheme != "https" && cb.Scheme != "http") || cb.Host == "") {
			return nil, bad("status_callback must be the node's base URL (https://HOST:PORT)")
		}
		if (g.From == "") == (g.MessagingService == "") {
			return nil, bad("twilio needs exactly one of from= and messaging_service=")
		}
	default:
		return nil, bad("unknown scheme " + model.Quote(u.Scheme))
	}
	if u.User == nil || u.User.Username() == "" {
		return nil, bad("the " + g.Driver + " gateway needs USER:PASS@ before the host")
	}
	pass, ok := u.User.Password()
	if !ok || pass == "" {
		return nil, bad("the " + g.Driver + " gateway needs a password (or auth token) after USER:")
	}
	g.User, g.Secret, g.Base = u.User.Username(), pass, &base
	return g, nil
}

// String shows the gateway without its secret: the driver, the user (an account SID is
// no secret on its own) and where it sends. A generic URL's password and query are masked.
func (g *SMSGateway) String() string {
	if g == nil {
		return "none"
	}
	u := *g.Base
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	switch g.Driver {
	case DriverAndroid:
		return "android+" + u.Scheme + "://" + g.User + ":***@" + u.Host + u.Path
	case DriverTwilio:
		sender := "from=" + g.From
		if g.MessagingService != "" {
			sender = "messaging_service=" + g.MessagingService
		}
		return "twilio://" + g.User + ":***@" + u.Host + "?" + sender
	}
	return u.String()
}
