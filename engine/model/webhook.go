package model

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"
)

// WebhookSecretPrefix starts every webhook secret (Standard Webhooks: "whsec_" and the
// base64 of the key).
const WebhookSecretPrefix = "whsec_"

// NewWebhookSecret returns a new random webhook secret: "whsec_" and the standard base64 of
// 32 random bytes.
func NewWebhookSecret() string {
	var key [32]byte
	rand.Read(key[:]) // never fails (crypto/rand since Go 1.24)
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(key[:])
}

// Webhook is a subscription of a tenant to webhook events.
type Webhook struct {
	ID     string   `json:"id"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	// Secret signs the messages; shown on creation only.
	Secret string `json:"secret,omitempty"`
	Status string `json:"status"`
	// DisabledReason says why a disabled subscription stopped (410, failures).
	DisabledReason string `json:"disabled_reason,omitempty"`
	LastSuccessAt  *Time  `json:"last_success_at"`
	// FailedMessages counts the messages that failed since the last success (or the last
	// re-enabling).
	FailedMessages int `json:"failed_messages"`
	// ReenabledAt is when PATCH last re-enabled the disabled subscription; null until then.
	// The auto-disable rule counts from the latest of it, the last success and creation.
	ReenabledAt *Time `json:"reenabled_at"`
	CreatedAt   Time  `json:"created_at"`
	UpdatedAt   Time  `json:"updated_at"`
}

// Public returns the subscription without its secret.
func (w Webhook) Public() Webhook { w.Secret = ""; return w }

// failingSince is when the auto-disable rule starts counting the time without success:
// the latest of the last success, the last re-enabling and the creation.
func (w *Webhook) FailingSince() time.Time {
	since := w.CreatedAt.Time
	for _, t := range []*Time{w.LastSuccessAt, w.ReenabledAt} {
		if t != nil && t.After(since) {
			since = t.Time
		}
	}
	return since
}

// Wants reports whether the subscription asks for the event name: no filter means all.
func (w *Webhook) Wants(name string) bool {
	if len(w.Events) == 0 {
		return true
	}
	for _, p := range w.Events {
		if MatchName(p, name) {
			return true
		}
	}
	return false
}

// matchName matches an event name against a pattern where `*` stands for any run of
// characters.
func MatchName(pattern, name string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == name
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	for i, part := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(name, part)
		}
		j := strings.Index(name, part)
		if j < 0 {
			return false
		}
		name = name[j+len(part):]
	}
	return true
}

// WebhookInput is the body of POST /v1/webhooks.
type WebhookInput struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
}

// WebhookPatch is the body of PATCH /v1/webhooks/:id; absent (or null) fields stay as
// they are.
type WebhookPatch struct {
	// Enabled true re-enables a disabled subscription, its failure counters reset; false
	// disables it (its pending messages fail at their next attempt).
	Enabled *bool `json:"enabled"`
	// URL moves the subscription; it is checked as at creation.
	URL *string `json:"url"`
	// Events replaces the events filter; [] means all.
	Events *[]string `json:"events"`
}

// WebhookTestPayload is the payload of a webhook.test message.
type WebhookTestPayload struct {
	WebhookID string `json:"webhook_id"`
	Message   string `json:"message"`
}

// WebhookTestSent is the answer of POST /v1/webhooks/:id/test: the message is queued in
// the outbox; its attempt appears in GET /v1/webhooks/:id/deliveries under message_id.
type WebhookTestSent struct {
	// MessageID is the webhook-id header the receiver gets.
	MessageID string `json:"message_id"`
	WebhookID string `json:"webhook_id"`
	Event     string `json:"event"`
	// Status is "queued": the call is made after commit, by the scheduler.
	Status   string `json:"status"`
	QueuedAt Time   `json:"queued_at"`
}

// DeliveryAttempt is one attempt of a webhook message, as GET
// /v1/webhooks/:id/deliveries lists it.
type DeliveryAttempt struct {
	ID        string `json:"id"`
	WebhookID string `json:"webhook_id"`
	// MessageID is the webhook-id header: the same on every attempt of one message.
	MessageID     string `json:"message_id"`
	Event         string `json:"event"`
	Attempt       int    `json:"attempt"`
	Status        string `json:"status"` // succeeded, failed
	StatusCode    int    `json:"status_code"`
	Error         string `json:"error,omitempty"`
	DurationMs    int64  `json:"duration_ms"`
	At            Time   `json:"at"`
	NextAttemptAt *Time  `json:"next_attempt_at"`
}
