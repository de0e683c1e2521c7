package engine

// Temporary stand-ins for symbols landing from parallel work; deleted at merge.

import (
	"context"
	"net"
	"net/url"
)

type AddressPolicy struct{ AllowLoopback, AllowPrivate bool }

func ValidateWebhookURL(ctx context.Context, raw string, p AddressPolicy, r *net.Resolver) error {
	return nil
}

func NewWebhookSecret() string { return "whsec_" + RandomToken(32) }

type HTTPSenderOptions struct {
	Policy     AddressPolicy
	SMSGateway *url.URL
}

func NewHTTPSender(opt HTTPSenderOptions) Sender { return NoSender{} }
