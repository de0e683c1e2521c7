package engine

// Temporary stand-ins for symbols landing from parallel work; deleted at merge.

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
)

type AddressPolicy struct{ AllowLoopback, AllowPrivate bool }

type ParsedPayload struct {
	Lat, Lng          *float64
	RequiredEquipment []string
	Severity          string
}

func ParsePayload(vertical string, payload json.RawMessage) (ParsedPayload, error) {
	var p ParsedPayload
	if len(payload) == 0 {
		return p, nil
	}
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		return p, Invalid("payload", "payload must be an object")
	}
	lat, ok1 := m["lat"].(float64)
	lng, ok2 := m["lng"].(float64)
	if ok1 && ok2 {
		p.Lat, p.Lng = &lat, &lng
	}
	return p, nil
}

func ValidateWebhookURL(ctx context.Context, raw string, p AddressPolicy, r *net.Resolver) error {
	return nil
}

func NewWebhookSecret() string { return "whsec_" + RandomToken(32) }

type HTTPSenderOptions struct {
	Policy     AddressPolicy
	SMSGateway *url.URL
}

func NewHTTPSender(opt HTTPSenderOptions) Sender { return NoSender{} }
