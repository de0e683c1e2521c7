package model

import "crypto/rand"

// Secret names of the installation, kept in the store's meta.
const (
	SecretJWT      = "jwt_secret"
	SecretInternal = "internal_secret"
	SecretNodeID   = "node_id"
	// SecretSMSWebhook is the root of the tenants' signing keys for the webhooks of SMS
	// Gateway for Android.
	SecretSMSWebhook = "sms_webhook_secret"
	// SecretUpstream names the installation secret the upstream API keys are encrypted
	// with.
	SecretUpstream = "upstream_secret"
)

// NewSecret returns a fresh value for the installation secret name: a node id for
// SecretNodeID, a token for SecretInternal, 32 random bytes for the others.
func NewSecret(name string) []byte {
	switch name {
	case SecretNodeID:
		return []byte(NewID())
	case SecretInternal:
		return []byte(RandomToken(32))
	default:
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return b
	}
}

// MetaSecret returns an installation secret within tx, creating it when tx may write.
func MetaSecret(tx interface {
	Meta(key string) ([]byte, error)
	PutMeta(key string, value []byte) error
}, name string) ([]byte, error) {
	v, err := tx.Meta(name)
	if err != nil || v != nil {
		return v, err
	}
	v = NewSecret(name)
	return v, tx.PutMeta(name, v)
}
