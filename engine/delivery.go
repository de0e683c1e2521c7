package engine

import (
	"time"

	"github.com/fieldrelay/fieldrelay/engine/delivery"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// Webhook event names of an event's life.
const (
	HookEventCreated   = delivery.HookEventCreated
	HookEventDelivered = "event.delivered"
	HookEventFailed    = "event.failed"
)

// nominalChannels returns the channels a zone state allows, primary first (docs/rules.md,
// Delivery): online and unknown → rest_full then sms; degraded → sms; offline → none.
func nominalChannels(state string) []string {
	switch state {
	case model.ConnOffline:
		return nil
	case model.ConnDegraded:
		return []string{model.ChannelSMS}
	default:
		return []string{model.ChannelREST, model.ChannelSMS}
	}
}

// channelLimit is how many channels a priority may use: critical and high every one,
// normal the primary and one fallback, low the primary only.
func channelLimit(priority string) int {
	switch priority {
	case model.PriorityNormal:
		return 2
	case model.PriorityLow:
		return 1
	default:
		return 99
	}
}

// zoneState returns the connectivity in force for an event's zone; no zone is the node's
// own link, online.
func zoneState(zone *model.Zone, now time.Time) string {
	if zone == nil {
		return model.ConnOnline
	}
	return zone.Connectivity.StateAt(now)
}

// available reports whether a channel has a target for ev: rest_full needs a webhook
// subscribed to event.created (or a device queue, which planDelivery counts), sms a
// gateway and a phone to send to.
func (e *Engine) available(cfg *tenantConfig, ev *model.Event, ch string) bool {
	switch ch {
	case model.ChannelREST:
		return cfg.wantsWebhook(HookEventCreated)
	case model.ChannelSMS:
		return e.sender.SMSAvailable() && len(cfg.smsRecipients(ev)) > 0
	}
	return false
}

// planDelivery decides an event's channels and writes the event with its first delivery
// messages (all of them for a critical event). An event of an offline zone is
// queued_offline and waits in the parked index of its zone until the zone can be reached.
// An event whose channels have no target yet is pending with its nominal primary channel
// and no plan, until a target appears (releaseWaiting).
func (e *Engine) planDelivery(tx model.Tx, tenantID string, cfg *tenantConfig, zone *model.Zone, ev *model.Event) error {
	now := e.clock.Now()
	nominal := nominalChannels(zoneState(zone, now))
	devices, err := eventDevices(tx, tenantID, ev) // the device queues of rest_full
	if err != nil {
		return err
	}
	var plan []string
	for _, ch := range nominal {
		if len(plan) < channelLimit(ev.Priority) && (e.available(cfg, ev, ch) || ch == model.ChannelREST && len(devices) > 0) {
			plan = append(plan, ch)
		}
	}
	plan = e.withoutDownSMS(plan)
	ev.Delivery = model.DeliveryState{Plan: plan}
	switch {
	case len(nominal) == 0:
		ev.Status, ev.ChannelSelected = model.EventQueuedOffline, model.ChannelQueued
	case len(plan) == 0:
		ev.Status, ev.ChannelSelected = model.EventPending, nominal[0]
	default:
		ev.Status, ev.ChannelSelected = model.EventPending, plan[0]
	}
	if len(nominal) == 0 {
		if err := tx.ParkEvent(tenantID, zoneCodeOf(ev), ev.ID); err != nil {
			return err
		}
	}
	if len(plan) == 0 {
		return putEvent(tx, tenantID, ev)
	}
	n := 1
	if ev.Priority == model.PriorityCritical {
		n = len(plan)
	}
	for range n {
		if err := e.startNextChannel(tx, cfg, ev); err != nil {
			return err
		}
	}
	return putEvent(tx, tenantID, ev)
}

func zoneCodeOf(ev *model.Event) string {
	if ev.ZoneCode == nil {
		return ""
	}
	return *ev.ZoneCode
}

// startNextChannel writes the messages of the event's next planned channel. The caller
// stores the event.
func (e *Engine) startNextChannel(tx model.Tx, cfg *tenantConfig, ev *model.Event) error {
	d := &ev.Delivery
	if d.Started >= len(d.Plan) {
		return nil
	}
	ch := d.Plan[d.Started]
	d.Started++
	ev.ChannelsAttempted = append(ev.ChannelsAttempted, ch)
	ev.UpdatedAt = model.At(e.clock.Now())
	var n int
	var err error
	switch ch {
	case model.ChannelREST:
		n, err = e.webhookMessages(tx, cfg, HookEventCreated, outboxTag{eventID: ev.ID, channel: model.ChannelREST}, ev)
		if err == nil {
			var queued int
			queued, err = e.queueEvent(tx, cfg.tenant.ID, ev)
			n += queued
		}
	case model.ChannelSMS:
		n, err = e.smsMessages(tx, cfg, ev)
	}
	if err != nil {
		return err
	}
	d.Outstanding += n
	return nil
}

// smsMessages writes one SMS of the event's FR1 line per recipient.
func (e *Engine) smsMessages(tx model.Tx, cfg *tenantConfig, ev *model.Event) (int, error) {
	text, err := smscodec.EncodeSMS(ev.ID, ev.Priority, ev.Type, zoneCodeOf(ev), ev.Lat, ev.Lng)
	if err != nil {
		return 0, err
	}
	now := model.At(e.clock.Now())
	n := 0
	for _, to := range cfg.smsRecipients(ev) {
		o := &model.OutboxEntry{ID: model.NewID(), TenantID: cfg.tenant.ID, Kind: model.OutboxSMS, To: to, Text: text,
			EventID: ev.ID, Channel: model.ChannelSMS, DueAt: now, CreatedAt: now}
		if err := e.enqueue(tx, o); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// releaseQueuedEvents plans the delivery of a zone's parked events once the zone can be
// reached again. It runs in the transaction that recorded the zone's new state.
func (e *Engine) releaseQueuedEvents(tx model.Tx, tenantID, zoneCode string) error {
	return e.releaseParked(tx, tenantID, &zoneCode)
}

// Events that waited for a target are released when one appears, from the last
// waitingWindow and at most waitingMax of them, newest first.
const (
	waitingWindow = 24 * time.Hour
	waitingMax    = 10_000
)

// releaseWaiting plans the delivery of the recent pending events that had no target, once
// tx has added one (a webhook subscribed to event.created).
func (e *Engine) releaseWaiting(tx model.Tx, tenantID string) error {
	since := e.clock.Now().Add(-waitingWindow)
	events, _, err := tx.Events(tenantID, model.EventFilter{Status: model.EventPending, Since: &since}, model.Page{Limit: waitingMax})
	if err != nil {
		return err
	}
	cfg, err := loadTenantConfig(tx, tenantID) // tx changed the directory: read it afresh
	if err != nil {
		return err
	}
	for i := range events {
		ev := &events[i]
		if len(ev.Delivery.Plan) > 0 {
			continue
		}
		var zone *model.Zone
		if ev.ZoneCode != nil {
			zone = cfg.zone(*ev.ZoneCode)
		}
		if err := e.planDelivery(tx, tenantID, cfg, zone, ev); err != nil {
			return err
		}
	}
	return nil
}

// releaseParked re-plans the parked events of one zone (nil: of every zone) and starts
// those that now have a way out; the others stay parked.
func (e *Engine) releaseParked(tx model.Tx, tenantID string, zoneCode *string) error {
	refs, err := tx.ParkedEvents(tenantID, zoneCode)
	if err != nil || len(refs) == 0 {
		return err
	}
	// Its callers have just changed the directory in tx (a zone's state, a new webhook):
	// the cache cannot know that before commit, so the configuration is read afresh.
	cfg, err := loadTenantConfig(tx, tenantID)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		ev, err := tx.Event(tenantID, ref.EventID)
		if model.IsKind(err, model.KindNotFound) {
			if err := tx.UnparkEvent(tenantID, ref.ZoneCode, ref.EventID); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if ev.Status != model.EventPending && ev.Status != model.EventQueuedOffline {
			if err := tx.UnparkEvent(tenantID, ref.ZoneCode, ref.EventID); err != nil {
				return err
			}
			continue
		}
		var zone *model.Zone
		if ev.ZoneCode != nil {
			zone = cfg.zone(*ev.ZoneCode)
		}
		if err := tx.UnparkEvent(tenantID, ref.ZoneCode, ref.EventID); err != nil {
			return err
		}
		// planDelivery parks it again when there is still no way out.
		if err := e.planDelivery(tx, tenantID, cfg, zone, ev); err != nil {
			return err
		}
	}
	return nil
}

// settleDelivery applies the outcome of an attempt of a message that delivers an event:
// the first success delivers the event; the first failure of a channel starts the next
// planned one; when every message has settled without success and no channel is left,
// the event fails.
func (e *Engine) settleDelivery(tx model.Tx, o *model.OutboxEntry, ok, settled bool) error {
	ev, err := tx.Event(o.TenantID, o.EventID)
	if model.IsKind(err, model.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	cfg, err := e.tenantConfig(tx, o.TenantID)
	if err != nil {
		return err
	}
	now := model.At(e.clock.Now())
	d := &ev.Delivery
	if settled && d.Outstanding > 0 {
		d.Outstanding--
	}
	ev.UpdatedAt = now
	switch {
	case ok && ev.Status == model.EventPending:
		ev.Status, ev.DeliveredAt = model.EventDelivered, &now
		if err := e.count(tx, o.TenantID, now.Time, model.UsageDelta{Channel: ev.ChannelSelected, EventStatus: model.EventDelivered}); err != nil {
			return err
		}
		if _, err := e.webhookMessages(tx, cfg, HookEventDelivered, outboxTag{}, ev); err != nil {
			return err
		}
	case ok || ev.Status != model.EventPending:
	default:
		if o.Attempts == 1 && d.Started < len(d.Plan) && o.Channel == d.Plan[d.Started-1] {
			// The newest channel failed once: its fallback starts while it retries.
			if err := e.startNextChannel(tx, cfg, ev); err != nil {
				return err
			}
		}
		for settled && d.Outstanding == 0 && d.Started < len(d.Plan) {
			if err := e.startNextChannel(tx, cfg, ev); err != nil {
				return err
			}
		}
		if d.Outstanding == 0 {
			ev.Status = model.EventFailed
			if err := e.count(tx, o.TenantID, now.Time, model.UsageDelta{Channel: ev.ChannelSelected, EventStatus: model.EventFailed}); err != nil {
				return err
			}
			if _, err := e.webhookMessages(tx, cfg, HookEventFailed, outboxTag{}, ev); err != nil {
				return err
			}
		}
	}
	return putEvent(tx, o.TenantID, ev)
}

// withoutDownSMS drops the sms channel from a delivery plan while the gateway is down,
// unless it is the plan's only channel: then its messages wait for the gateway on the
// retry schedule rather than the event waiting for a
// channel (docs/decisions/0125-sms-gateway-health.md).
func (e *Engine) withoutDownSMS(plan []string) []string {
	if len(plan) < 2 || e.SMSGatewayState() != "down" {
		return plan
	}
	out := plan[:0:0]
	for _, ch := range plan {
		if ch != model.ChannelSMS {
			out = append(out, ch)
		}
	}
	return out
}
