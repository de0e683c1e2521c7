package engine

import (
	"context"
	"encoding/json"
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

// HookWebhookTest names the message of POST /v1/webhooks/:id/test. It goes to the one
// subscription asked, whatever its events filter, so it is no name to subscribe to.
const HookWebhookTest = "webhook.test"

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
func (w *Webhook) failingSince() time.Time {
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
	events, err := checkWebhookEvents(in.Events)
	in.Events = events
	return err
}

// checkWebhookEvents validates the events filter of a subscription and returns it trimmed
// and without duplicates (an empty filter, meaning all, is []).
func checkWebhookEvents(in []string) ([]string, error) {
	seen := map[string]bool{}
	events := []string{}
	for _, p := range in {
		p = strings.TrimSpace(p)
		if p == "" || len(p) > 64 {
			return nil, Invalid("events", "events must hold event names such as event.created or mission.*")
		}
		if p == HookWebhookTest {
			return nil, Invalid("events", "%s is sent by POST /v1/webhooks/{id}/test to its subscription whatever its events; it is no name to subscribe to", HookWebhookTest)
		}
		if !slices.ContainsFunc(WebhookNames, func(n string) bool { return matchName(p, n) }) {
			return nil, Invalid("events", "%s is not a webhook event name (known: %s; `*` wildcards allowed)", Quote(p), strings.Join(WebhookNames, ", "))
		}
		if !seen[p] {
			seen[p] = true
			events = append(events, p)
		}
	}
	return events, nil
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

// CheckWebhookPatch validates a change of subscription as CheckWebhookInput validates a
// new one (a new URL against the address policy, resolving its host), before the
// transaction.
func (e *Engine) CheckWebhookPatch(ctx context.Context, in *WebhookPatch) error {
	if in.URL != nil {
		if strings.TrimSpace(*in.URL) == "" {
			return Invalid("url", "url cannot be empty")
		}
		if err := ValidateWebhookURL(ctx, *in.URL, e.policy, nil); err != nil {
			return err
		}
	}
	if in.Events != nil {
		events, err := checkWebhookEvents(*in.Events)
		if err != nil {
			return err
		}
		in.Events = &events
	}
	return nil
}

// webhookDisabledOnRequest is the disabled_reason of a subscription disabled by PATCH.
const webhookDisabledOnRequest = "disabled on request (PATCH enabled: false)"

// UpdateWebhook changes a subscription of p's tenant within tx (PATCH /v1/webhooks/:id);
// in was checked by CheckWebhookPatch. Re-enabling a disabled subscription clears its
// disabled_reason and restarts the auto-disable rule: failed_messages back to 0, the five
// days counted from now (reenabled_at). The secret stays. A subscription that becomes
// active and wants event.created releases the events waiting for a target, as a new one
// does. A request that changes nothing leaves updated_at alone. The answer has no secret.
func (e *Engine) UpdateWebhook(tx Tx, p Principal, id string, in WebhookPatch) (*Webhook, error) {
	w, err := tx.Webhook(p.TenantID, id)
	if err != nil {
		return nil, err
	}
	now := At(e.clock.Now())
	targetBefore := w.Status == WebhookActive && w.Wants(HookEventCreated)
	changed := false
	if in.URL != nil && *in.URL != w.URL {
		w.URL, changed = *in.URL, true
	}
	if in.Events != nil && !slices.Equal(*in.Events, w.Events) {
		w.Events, changed = *in.Events, true
	}
	if in.Enabled != nil {
		switch {
		case *in.Enabled && w.Status != WebhookActive:
			w.Status, w.DisabledReason, w.FailedMessages, w.ReenabledAt = WebhookActive, "", 0, &now
			changed = true
		case !*in.Enabled && w.Status == WebhookActive:
			w.Status, w.DisabledReason = WebhookDisabled, webhookDisabledOnRequest
			changed = true
		}
	}
	if changed {
		w.UpdatedAt = now
		if err := tx.PutWebhook(p.TenantID, w); err != nil {
			return nil, err
		}
	}
	if !targetBefore && w.Status == WebhookActive && w.Wants(HookEventCreated) {
		if err := e.releaseWaiting(tx, p.TenantID); err != nil {
			return nil, err
		}
	}
	pub := w.Public()
	return &pub, nil
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

// SendTestWebhook queues a signed webhook.test message to one subscription of p's tenant,
// within tx: through the outbox like every webhook, to this subscription only, whatever its
// events filter and whether or not it is disabled (a disabled receiver can be checked
// before it is re-enabled). The message has one attempt, no retry, and changes nothing of
// the subscription's health (status, failed_messages, last_success_at): it is a probe.
func (e *Engine) SendTestWebhook(tx Tx, p Principal, id string) (*WebhookTestSent, error) {
	w, err := tx.Webhook(p.TenantID, id)
	if err != nil {
		return nil, err
	}
	now := At(e.clock.Now())
	body, err := json.Marshal(WebhookEnvelope{Event: HookWebhookTest, TenantID: p.TenantID, OccurredAt: now,
		Payload: WebhookTestPayload{WebhookID: w.ID, Message: "a test message from fieldrelay, sent on request"}})
	if err != nil {
		return nil, err
	}
	o := &OutboxEntry{ID: NewID(), TenantID: p.TenantID, Kind: OutboxWebhook, WebhookID: w.ID,
		Name: HookWebhookTest, Body: body, DueAt: now, CreatedAt: now}
	if err := e.enqueue(tx, o); err != nil {
		return nil, err
	}
	return &WebhookTestSent{MessageID: o.ID, WebhookID: w.ID, Event: HookWebhookTest, Status: "queued", QueuedAt: now}, nil
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
