package engine

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Webhook subscription statuses.
const (
	WebhookActive   = "active"
	WebhookDisabled = "disabled"
)

// WebhookNames lists every webhook event name a subscription can ask for (API.md).
var WebhookNames = []string{HookEventCreated, HookEventDelivered, HookEventFailed,
	HookTeamDispatched, missionStatusHook, HookMissionReinforced,
	HookDispatchRequiresMn, HookSyncBatchProcessed}

// Auto-disable rule: a subscription with no success for this long and at least this many
// failed messages is disabled.
const (
	webhookDisableAfter    = 5 * 24 * time.Hour
	webhookDisableMessages = 10
	maxWebhooksPerTenant   = 50
)

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
	// FailedMessages counts the messages that failed since the last success.
	FailedMessages int  `json:"failed_messages"`
	CreatedAt      Time `json:"created_at"`
	UpdatedAt      Time `json:"updated_at"`
}

// Public returns the subscription without its secret.
func (w Webhook) Public() Webhook { w.Secret = ""; return w }

// Wants reports whether the subscription asks for the event name: no filter means all.
func (w *Webhook) Wants(name string) bool {
	if len(w.Events) == 0 {
		return true
	}
	for _, p := range w.Events {
		if matchName(p, name) {
			return true
		}
	}
	return false
}

// matchName matches an event name against a pattern where `*` stands for any run of
// characters.
func matchName(pattern, name string) bool {
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

// CheckWebhookInput validates a subscription, resolving its host to check the address
// policy. It runs before the transaction: DNS has no place inside one.
func (e *Engine) CheckWebhookInput(ctx context.Context, in *WebhookInput) error {
	if strings.TrimSpace(in.URL) == "" {
		return Invalid("url", "url is required")
	}
	if err := ValidateWebhookURL(ctx, in.URL, e.policy, nil); err != nil {
		return err
	}
	seen := map[string]bool{}
	events := []string{}
	for _, p := range in.Events {
		p = strings.TrimSpace(p)
		if p == "" || len(p) > 64 {
			return Invalid("events", "events must hold event names such as event.created or mission.*")
		}
		if !slices.ContainsFunc(WebhookNames, func(n string) bool { return matchName(p, n) }) {
			return Invalid("events", "%q is not a webhook event name (known: %s; `*` wildcards allowed)", p, strings.Join(WebhookNames, ", "))
		}
		if !seen[p] {
			seen[p] = true
			events = append(events, p)
		}
	}
	in.Events = events
	return nil
}

// CreateWebhook subscribes p's tenant to webhook events, within tx; in was checked by
// CheckWebhookInput. The answer holds the secret, which is never shown again. Recent
// events that waited for a delivery target are released when the subscription wants
// event.created.
func (e *Engine) CreateWebhook(tx Tx, p Principal, in WebhookInput) (*Webhook, error) {
	existing, err := tx.Webhooks(p.TenantID)
	if err != nil {
		return nil, err
	}
	if len(existing) >= maxWebhooksPerTenant {
		return nil, Errorf(KindConflict, "a tenant has at most %d webhooks", maxWebhooksPerTenant)
	}
	now := At(e.clock.Now())
	w := &Webhook{ID: NewID(), URL: in.URL, Events: in.Events, Secret: NewWebhookSecret(),
		Status: WebhookActive, CreatedAt: now, UpdatedAt: now}
	if err := tx.PutWebhook(p.TenantID, w); err != nil {
		return nil, err
	}
	if w.Wants(HookEventCreated) {
		if err := e.releaseWaiting(tx, p.TenantID); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// DeleteWebhook removes a subscription; its pending messages fail at their next attempt.
func (e *Engine) DeleteWebhook(tx Tx, p Principal, id string) (*Webhook, error) {
	w, err := tx.Webhook(p.TenantID, id)
	if err != nil {
		return nil, err
	}
	return w, tx.DeleteWebhook(p.TenantID, id)
}

// Webhooks lists p's tenant's subscriptions, newest first, without secrets.
func (e *Engine) Webhooks(ctx context.Context, p Principal, page Page) ([]Webhook, string, error) {
	var all []Webhook
	err := e.store.View(ctx, func(tx Tx) (err error) {
		all, err = tx.Webhooks(p.TenantID)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next, err := pageList(all, byIDNewestFirst(func(w *Webhook) string { return w.ID }), nil, page)
	for i := range out {
		out[i] = out[i].Public()
	}
	return out, next, err
}

// Webhook returns one subscription of p's tenant, without its secret.
func (e *Engine) Webhook(ctx context.Context, p Principal, id string) (*Webhook, error) {
	var w *Webhook
	err := e.store.View(ctx, func(tx Tx) (err error) {
		w, err = tx.Webhook(p.TenantID, id)
		return err
	})
	if w != nil {
		pub := w.Public()
		w = &pub
	}
	return w, err
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

// WebhookDeliveries lists the attempts of one subscription, newest first.
func (e *Engine) WebhookDeliveries(ctx context.Context, p Principal, id string, pg Page) ([]DeliveryAttempt, string, error) {
	var out []DeliveryAttempt
	var next string
	err := e.store.View(ctx, func(tx Tx) error {
		if _, err := tx.Webhook(p.TenantID, id); err != nil {
			return err
		}
		var err error
		out, next, err = tx.DeliveryAttempts(p.TenantID, id, pg)
		return err
	})
	return out, next, err
}
