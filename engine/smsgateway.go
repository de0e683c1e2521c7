package engine

import "github.com/fieldrelay/fieldrelay/engine/sms"

// The use cases of the SMS gateway are sms.Gateway's, embedded in the Engine; these are
// the names of engine/sms that the server and the tests use.

// SMSGatewayKeyPrefix prefixes the KeyID of a gateway's principal.
const SMSGatewayKeyPrefix = sms.SMSGatewayKeyPrefix

// Outcomes of an inbound SMS.
const (
	SMSOutcomeApplied     = sms.SMSOutcomeApplied
	SMSOutcomeInvalid     = sms.SMSOutcomeInvalid
	SMSOutcomeUnknownCode = sms.SMSOutcomeUnknownCode
	SMSOutcomeStranger    = sms.SMSOutcomeStranger
	SMSOutcomeRefused     = sms.SMSOutcomeRefused
)

// SMSWebhookKey is the signing key of a tenant's webhooks of SMS Gateway for Android
// (sms.SMSWebhookKey).
func SMSWebhookKey(secret []byte, tenantID string) string { return sms.SMSWebhookKey(secret, tenantID) }

// NormalizePhone reads a sender's number the way team members' phones are stored
// (sms.NormalizePhone).
func NormalizePhone(s string) (string, bool) { return sms.NormalizePhone(s) }
