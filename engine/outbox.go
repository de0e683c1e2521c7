package engine

import (
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// outboxTag says what a message is for: delivering an event through a channel, or
// notifying a team of its mission.
type outboxTag struct {
	eventID, channel, missionID string
}

// webhookMessages writes one message named name to every active subscription of the
// tenant that wants it, and returns how many it wrote. The change also goes to the
// tenant's stream after commit (event.created is published by createEvent: this
// function sees it only when a webhook channel is planned).
func (e *Engine) webhookMessages(tx model.Tx, cfg *tenantConfig, name string, tag outboxTag, payload any) (int, error) {
	if name != HookEventCreated {
		perm, team := streamScope(name, payload)
		if err := e.publish(tx, cfg.tenant.ID, name, perm, team, payload); err != nil {
			return 0, err
		}
	}
	now := model.At(e.clock.Now())
	var body []byte
	n := 0
	for i := range cfg.webhooks {
		wh := &cfg.webhooks[i]
		if wh.Status != WebhookActive || !wh.Wants(name) {
			continue
		}
		if body == nil {
			var err error
			env := model.WebhookEnvelope{Event: name, Payload: payload, TenantID: cfg.tenant.ID, OccurredAt: now}
			if body, err = env.AppendJSON(make([]byte, 0, 1024)); err != nil {
				return n, err
			}
		}
		o := &model.OutboxEntry{ID: model.NewID(), TenantID: cfg.tenant.ID, Kind: model.OutboxWebhook, WebhookID: wh.ID,
			Name: name, Body: body, EventID: tag.eventID, Channel: tag.channel, MissionID: tag.missionID,
			DueAt: now, CreatedAt: now}
		if err := e.enqueue(tx, o); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// notify writes the webhook messages of a tenant's change (team.dispatched,
// mission.status_updated…) within tx.
func (e *Engine) notify(tx model.Tx, tenantID, name string, payload any) error {
	cfg, err := e.tenantConfig(tx, tenantID)
	if err != nil {
		return err
	}
	_, err = e.webhookMessages(tx, cfg, name, outboxTag{}, payload)
	return err
}
