package sms

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// SMSGatewayKeyPrefix starts the key_id recorded with an SMS that a gateway's own webhook
// delivered (SMS Gateway for Android, Twilio): "sms-gateway:android", "sms-gateway:twilio".
// No API key relayed it; the gateway's signature did.
const SMSGatewayKeyPrefix = "sms-gateway:"

// SMSGatewayPrincipal returns the caller of an SMS gateway's webhook once the server has
// checked the webhook's signature: the tenant its URL names, holding sms:inbound only,
// in the name of the gateway (key id SMSGatewayKeyPrefix + driver), so that ReceiveSMS
// takes its replies as it takes the gateway key's. A tenant that does not exist is
// not_found; a suspended one tenant_suspended.
func (e *Gateway) SMSGatewayPrincipal(ctx context.Context, tenantID, driver string) (model.Principal, error) {
	if !model.ValidID(tenantID) {
		return model.Principal{}, model.NotFound("tenant")
	}
	var p model.Principal
	err := e.store.View(ctx, func(tx model.Tx) error {
		t, err := tx.Tenant(tenantID)
		if err != nil {
			return err
		}
		p = model.Principal{TenantID: t.ID, Plan: t.LicenseType, TenantActive: t.Status == model.TenantActive,
			KeyID: SMSGatewayKeyPrefix + driver, Scopes: []string{string(model.PermSMSInbound)}}
		return nil
	})
	if err != nil {
		return model.Principal{}, err
	}
	if !p.TenantActive {
		return model.Principal{}, model.Errorf(model.KindTenantSuspended, "this tenant is suspended")
	}
	return p, nil
}

// SMSWebhookKey is a tenant's signing key for the webhooks of SMS Gateway for Android: an
// HMAC of the tenant's id under the node's SecretSMSWebhook, so that each tenant's key
// differs and none is stored. It is entered in the phone app's webhook settings
// (`fieldrelay sms setup` prints it) and checks the X-Signature of its webhooks.
func SMSWebhookKey(secret []byte, tenantID string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("fieldrelay sms webhook signing key\x00" + tenantID))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// AdminSMSSetup returns what the SMS gateways of the tenant with slug need to reach it: its
// id (the last segment of the webhook URLs) and its Android webhook signing key.
func (e *Gateway) AdminSMSSetup(ctx context.Context, slug string) (*model.SMSSetup, error) {
	t, err := e.tenantBySlug(ctx, slug)
	if err != nil {
		return nil, err
	}
	secret, err := e.secret(ctx, model.SecretSMSWebhook)
	if err != nil {
		return nil, err
	}
	return &model.SMSSetup{TenantID: t.ID, AndroidSigningKey: SMSWebhookKey(secret, t.ID)}, nil
}

// SMSGatewayState says whether the node's SMS gateway is reachable (up, down, unknown), as
// its Sender last saw it; empty when the node has no SMS gateway.
func (e *Gateway) SMSGatewayState() string {
	if !e.sender.SMSAvailable() {
		return ""
	}
	if h, ok := e.sender.(model.SMSHealth); ok {
		return h.SMSGatewayState()
	}
	return "unknown"
}
