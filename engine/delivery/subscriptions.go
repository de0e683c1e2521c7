package delivery

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/netguard"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// maxWebhooksPerTenant bounds a tenant's subscriptions.
const maxWebhooksPerTenant = 50

// Subscriptions runs the use cases of a tenant's webhook subscriptions (/v1/webhooks): create,
// check, change, test, delete, list, and the log of their deliveries. The engine embeds
// it, so that its use cases are the Engine's.
type Subscriptions struct {
	store  model.Store
	clock  model.Clock
	policy netguard.AddressPolicy
	frame  writes.Frame
	sched  *Scheduler
	// names lists the webhook event names a subscription can ask for.
	names []string
	// releaseWaiting starts the delivery of a tenant's events that waited for a way out,
	// once a subscription makes one.
	releaseWaiting func(tx model.Tx, tenantID string) error
}

// NewSubscriptions returns the subscriptions' use cases of a node: policy says which
// addresses webhook URLs may name, names the event names a subscription can ask for,
// frame is the engine's write frame, releaseWaiting what a subscription that makes a way
// out starts; the test message goes through sched.
func NewSubscriptions(store model.Store, clock model.Clock, policy netguard.AddressPolicy, names []string, frame writes.Frame,
	sched *Scheduler, releaseWaiting func(tx model.Tx, tenantID string) error) *Subscriptions {
	return &Subscriptions{store: store, clock: clock, policy: policy, names: names, frame: frame, sched: sched,
		releaseWaiting: releaseWaiting}
}

// CheckWebhookInput validates a subscription, resolving its host to check the address
// policy. It runs before the transaction: DNS has no place inside one.
func (e *Subscriptions) CheckWebhookInput(ctx context.Context, in *model.WebhookInput) error {
	if strings.TrimSpace(in.URL) == "" {
		return model.Invalid("url", "url is required")
	}
	if err := model.CheckText("url", in.URL); err != nil {
		return err
	}
	if err := netguard.ValidateWebhookURL(ctx, in.URL, e.policy, nil); err != nil {
		return err
	}
	events, err := e.checkEvents(in.Events)
	in.Events = events
	return err
}

// checkWebhookEvents validates the events filter of a subscription and returns it trimmed
// and without duplicates (an empty filter, meaning all, is []).
func (e *Subscriptions) checkEvents(in []string) ([]string, error) {
	seen := map[string]bool{}
	events := []string{}
	for _, p := range in {
		p = strings.TrimSpace(p)
		if p == "" || len(p) > 64 {
			return nil, model.Invalid("events", "events must hold event names such as event.created or mission.*")
		}
		if p == HookWebhookTest {
			return nil, model.Invalid("events", "%s is sent by POST /v1/webhooks/{id}/test to its subscription whatever its events; it is no name to subscribe to", HookWebhookTest)
		}
		if !slices.ContainsFunc(e.names, func(n string) bool { return model.MatchName(p, n) }) {
			return nil, model.Invalid("events", "%s is not a webhook event name (known: %s; `*` wildcards allowed)", model.Quote(p), strings.Join(e.names, ", "))
		}
		if !seen[p] {
			seen[p] = true
			events = append(events, p)
		}
	}
	return events, nil
}

// CreateWebhook subscribes p's tenant to webhook events; in was checked by
// CheckWebhookInput. The answer holds the secret, which is never shown again. Recent
// events that waited for a delivery target are released when the subscription wants
// event.created.
func (e *Subscriptions) CreateWebhook(ctx context.Context, p model.Principal, in model.WebhookInput, w *model.Write) (*model.Webhook, error) {
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.Webhook, error) { return e.createWebhook(tx, p, in) })
}

// createWebhook is CreateWebhook within tx.
func (e *Subscriptions) createWebhook(tx model.Tx, p model.Principal, in model.WebhookInput) (*model.Webhook, error) {
	existing, err := tx.Webhooks(p.TenantID)
	if err != nil {
		return nil, err
	}
	if len(existing) >= maxWebhooksPerTenant {
		return nil, model.Errorf(model.KindConflict, "a tenant has at most %d webhooks", maxWebhooksPerTenant)
	}
	now := model.At(e.clock.Now())
	w := &model.Webhook{ID: model.NewID(), URL: in.URL, Events: in.Events, Secret: model.NewWebhookSecret(),
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

// CheckWebhookPatch validates a change of subscription as CheckWebhookInput validates a
// new one (a new URL against the address policy, resolving its host), before the
// transaction.
func (e *Subscriptions) CheckWebhookPatch(ctx context.Context, in *model.WebhookPatch) error {
	if in.URL != nil {
		if strings.TrimSpace(*in.URL) == "" {
			return model.Invalid("url", "url cannot be empty")
		}
		if err := model.CheckText("url", *in.URL); err != nil {
			return err
		}
		if err := netguard.ValidateWebhookURL(ctx, *in.URL, e.policy, nil); err != nil {
			return err
		}
	}
	if in.Events != nil {
		events, err := e.checkEvents(*in.Events)
		if err != nil {
			return err
		}
		in.Events = &events
	}
	return nil
}

// webhookDisabledOnRequest is the disabled_reason of a subscription disabled by PATCH.
const webhookDisabledOnRequest = "disabled on request (PATCH enabled: false)"

// UpdateWebhook changes a subscription of p's tenant (PATCH /v1/webhooks/:id);
// in was checked by CheckWebhookPatch. Re-enabling a disabled subscription clears its
// disabled_reason and restarts the auto-disable rule: failed_messages back to 0, the five
// days counted from now (reenabled_at). The secret stays. A subscription that becomes
// active and wants event.created releases the events waiting for a target, as a new one
// does. A request that changes nothing leaves updated_at alone. The answer has no secret.
func (e *Subscriptions) UpdateWebhook(ctx context.Context, p model.Principal, id string, in model.WebhookPatch, w *model.Write) (*model.Webhook, error) {
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.Webhook, error) { return e.updateWebhook(tx, p, id, in) })
}

// updateWebhook is UpdateWebhook within tx.
func (e *Subscriptions) updateWebhook(tx model.Tx, p model.Principal, id string, in model.WebhookPatch) (*model.Webhook, error) {
	w, err := tx.Webhook(p.TenantID, id)
	if err != nil {
		return nil, err
	}
	now := model.At(e.clock.Now())
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

// SendTestWebhook queues a signed webhook.test message to one subscription of p's tenant:
// through the outbox like every webhook, to this subscription only, whatever its
// events filter and whether or not it is disabled (a disabled receiver can be checked
// before it is re-enabled). The message has one attempt, no retry, and changes nothing of
// the subscription's health (status, failed_messages, last_success_at): it is a probe.
func (e *Subscriptions) SendTestWebhook(ctx context.Context, p model.Principal, id string, w *model.Write) (*model.WebhookTestSent, error) {
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.WebhookTestSent, error) { return e.sendTestWebhook(tx, p, id) })
}

// sendTestWebhook is SendTestWebhook within tx.
func (e *Subscriptions) sendTestWebhook(tx model.Tx, p model.Principal, id string) (*model.WebhookTestSent, error) {
	w, err := tx.Webhook(p.TenantID, id)
	if err != nil {
		return nil, err
	}
	now := model.At(e.clock.Now())
	body, err := json.Marshal(model.WebhookEnvelope{Event: HookWebhookTest, TenantID: p.TenantID, OccurredAt: now,
		Payload: model.WebhookTestPayload{WebhookID: w.ID, Message: "a test message from fieldrelay, sent on request"}})
	if err != nil {
		return nil, err
	}
	o := &model.OutboxEntry{ID: model.NewID(), TenantID: p.TenantID, Kind: model.OutboxWebhook, WebhookID: w.ID,
		Name: HookWebhookTest, Body: body, DueAt: now, CreatedAt: now}
	if err := e.sched.Enqueue(tx, o); err != nil {
		return nil, err
	}
	return &model.WebhookTestSent{MessageID: o.ID, WebhookID: w.ID, Event: HookWebhookTest, Status: "queued", QueuedAt: now}, nil
}

// DeleteWebhook removes a subscription; its pending messages fail at their next attempt.
func (e *Subscriptions) DeleteWebhook(ctx context.Context, p model.Principal, id string, w *model.Write) (*model.Webhook, error) {
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.Webhook, error) { return e.deleteWebhook(tx, p, id) })
}

// deleteWebhook is DeleteWebhook within tx.
func (e *Subscriptions) deleteWebhook(tx model.Tx, p model.Principal, id string) (*model.Webhook, error) {
	w, err := tx.Webhook(p.TenantID, id)
	if err != nil {
		return nil, err
	}
	return w, tx.DeleteWebhook(p.TenantID, id)
}

// Webhooks lists p's tenant's subscriptions, newest first, without secrets.
func (e *Subscriptions) Webhooks(ctx context.Context, p model.Principal, page model.Page) ([]model.Webhook, string, error) {
	var all []model.Webhook
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		all, err = tx.Webhooks(p.TenantID)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next, err := model.PageList(all, model.ByIDNewestFirst(func(w *model.Webhook) string { return w.ID }), nil, page)
	for i := range out {
		out[i] = out[i].Public()
	}
	return out, next, err
}

// Webhook returns one subscription of p's tenant, without its secret.
func (e *Subscriptions) Webhook(ctx context.Context, p model.Principal, id string) (*model.Webhook, error) {
	var w *model.Webhook
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		w, err = tx.Webhook(p.TenantID, id)
		return err
	})
	if w != nil {
		pub := w.Public()
		w = &pub
	}
	return w, err
}

// WebhookDeliveries lists the attempts of one subscription, newest first.
func (e *Subscriptions) WebhookDeliveries(ctx context.Context, p model.Principal, id string, pg model.Page) ([]model.DeliveryAttempt, string, error) {
	var out []model.DeliveryAttempt
	var next string
	err := e.store.View(ctx, func(tx model.Tx) error {
		if _, err := tx.Webhook(p.TenantID, id); err != nil {
			return err
		}
		var err error
		out, next, err = tx.DeliveryAttempts(p.TenantID, id, pg)
		return err
	})
	return out, next, err
}
