package model

import (
	"encoding/json"
	"time"
)

// Outbox entry kinds: the call the scheduler makes for an entry.
const (
	OutboxWebhook = "webhook"
	OutboxSMS     = "sms"
	// OutboxMail mails an account token (reset, verify) through the Mailer. The entry
	// names the user and the kind; each attempt issues the token it sends, so that no
	// token is ever stored in plaintext (docs/decisions/0090-account-mail-outbox.md).
	OutboxMail = "mail"
	// OutboxReinforce is a check, not a call: whether a mission still waits for its
	// team's acknowledgement (a reinforcement), run by the scheduler when due.
	OutboxReinforce = "reinforce"
	// OutboxOverdue is a check, not a call: whether an acknowledged mission reached
	// ON_SITE within the tenant's on-site timeout (mission_overdue), run when due.
	OutboxOverdue = "overdue"
)

// OutboxEntry is one message the node owes the world: written in the transaction that
// decided it, delivered by the scheduler after commit, and kept until it succeeds or its
// retries run out. Every attempt is recorded in it: before it is made, but for a webhook
// call on a store the node has alone, recorded with
// its outcome (docs/decisions/0129-delivery-rate.md).
type OutboxEntry struct {
	// ID is also the webhook-id of a webhook message: the same on every attempt.
	ID       string `json:"id"`
	TenantID string `json:"tenant_id"`
	Kind     string `json:"kind"`
	// WebhookID and Name (the webhook event name) are set on webhook messages.
	WebhookID string `json:"webhook_id,omitempty"`
	Name      string `json:"name,omitempty"`
	// Body is the webhook envelope.
	Body json.RawMessage `json:"body,omitempty"`
	// To and Text are set on SMS messages.
	To   string `json:"to,omitempty"`
	Text string `json:"text,omitempty"`
	// UserID and TokenKind are set on account mail: the user to send a token of that
	// kind to.
	UserID    string `json:"user_id,omitempty"`
	TokenKind string `json:"token_kind,omitempty"`
	// EventID and Channel are set on a message that delivers an event through a channel.
	EventID string `json:"event_id,omitempty"`
	Channel string `json:"channel,omitempty"`
	// MissionID is set on a message that notifies a team of its mission (its first
	// success moves the mission CREATED → SENT) and on a reinforcement check.
	MissionID string `json:"mission_id,omitempty"`
	// Attempts counts the attempts begun; DueAt is when the next one is due.
	Attempts   int    `json:"attempts"`
	DueAt      Time   `json:"due_at"`
	LastStatus int    `json:"last_status,omitempty"`
	LastError  string `json:"last_error,omitempty"`
	// LeasedBy names the run of the engine whose attempt is in flight (DueAt is then the
	// end of its lease); empty otherwise. On a node alone on its store a later run retries
	// it at once: the run that leased it died mid-call. On a store shared by several
	// processes (SharedStore) the others leave it until DueAt, then take it over.
	LeasedBy  string `json:"leased_by,omitempty"`
	CreatedAt Time   `json:"created_at"`
}

// delivers reports whether the entry carries an event through one of its channels.
func (o *OutboxEntry) Delivers() bool { return o.EventID != "" && o.Channel != "" }

// OutboxRef points at a pending outbox entry: what the scheduler keeps in memory.
type OutboxRef struct {
	TenantID string
	ID       string
	DueAt    time.Time
	// Leased is true when an attempt was in flight (the entry's LeasedBy is set).
	Leased bool
}

// WebhookEnvelope is the body of every webhook message (docs/rules.md, Webhooks).
type WebhookEnvelope struct {
	Event      string `json:"event"`
	Payload    any    `json:"payload"`
	TenantID   string `json:"tenant_id"`
	OccurredAt Time   `json:"occurred_at"`
}
