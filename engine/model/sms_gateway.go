package model

// SMSSetup is what a tenant's SMS gateway needs to deliver the SMS it receives: the
// tenant's id (the last segment of the webhook URL /v1/sms/<driver>/<tenant_id>) and the
// signing key of SMS Gateway for Android's webhooks (Twilio signs with its auth token).
type SMSSetup struct {
	TenantID          string `json:"tenant_id"`
	AndroidSigningKey string `json:"android_signing_key"`
}
