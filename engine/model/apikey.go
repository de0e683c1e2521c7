package model

import "time"

// API key format: the live-key prefix and 32 base62 characters.
const (
	APIKeyPrefix    = "fr_live_"
	APIKeyRandomLen = 32
	// APIKeyShownPrefix is how many leading characters of a key are listed.
	APIKeyShownPrefix = len(APIKeyPrefix) + 4
)

// LooksLikeAPIKey reports whether s has the shape of a key (so that malformed headers are
// refused without a store look-up).
func LooksLikeAPIKey(s string) bool {
	if len(s) != len(APIKeyPrefix)+APIKeyRandomLen || s[:len(APIKeyPrefix)] != APIKeyPrefix {
		return false
	}
	for i := len(APIKeyPrefix); i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// APIKey is a tenant's credential for server-to-server calls. The key itself is shown
// once; only its SHA-256 is stored.
type APIKey struct {
	ID         string   `json:"id"`
	TenantID   string   `json:"tenant_id"`
	Name       string   `json:"name"`
	Prefix     string   `json:"prefix"`
	Scopes     []string `json:"scopes"`
	CreatedAt  Time     `json:"created_at"`
	LastUsedAt *Time    `json:"last_used_at"`
	ExpiresAt  *Time    `json:"expires_at"`
}

// APIKeyRecord is an APIKey with the hash it is found by, as stored.
type APIKeyRecord struct {
	APIKey
	Hash string `json:"hash"`
}

// Active reports whether the key is usable at now.
func (k *APIKey) Active(now time.Time) bool {
	return k.ExpiresAt == nil || now.Before(k.ExpiresAt.Time)
}

// CreateAPIKeyInput names a new key and its scopes (all but sms:inbound when empty).
type CreateAPIKeyInput struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

// NewKey is a created or rotated key: the full key, shown once, and its record.
type NewKey struct {
	APIKey string  `json:"api_key"`
	Key    *APIKey `json:"key"`
	// PreviousKeyExpiresAt is set by a rotation.
	PreviousKeyExpiresAt *Time `json:"previous_key_expires_at,omitempty"`
}

func (in *CreateAPIKeyInput) Validate() error {
	var err error
	if in.Name == "" {
		in.Name = "api key"
	}
	if err = CheckName("name", in.Name, 100); err != nil {
		return err
	}
	if in.Scopes == nil {
		in.Scopes = DefaultKeyScopes()
	}
	in.Scopes, err = normalizeScopes(in.Scopes)
	return err
}

// RotateAPIKeyInput picks the key to rotate and how long the old one stays valid.
type RotateAPIKeyInput struct {
	// KeyID is the key to rotate; when empty, the caller's own key, else the tenant's
	// oldest key without an expiry.
	KeyID              string `json:"key_id"`
	GracePeriodMinutes *Int   `json:"grace_period_minutes"`
}
