package engine

import (
	"time"
)

// Webhook event names of an event's life.
const (
	HookEventCreated   = "event.created"
	HookEventDelivered = "event.delivered"
	HookEventFailed    = "event.failed"
)

// nominalChannels returns the channels a zone state allows, primary first (API.md,
// Delivery): online and unknown → rest_full then sms; degraded → sms; offline → none.
func nominalChannels(state string) []string {
	switch state {
	case ConnOffline:
		return nil
	case ConnDegraded:
		return []string{ChannelSMS}
	default:
		return []string{ChannelREST, ChannelSMS}
	}
}

// channelLimit is how many channels a priority may use: critical and high every one,
// normal the primary and one fallback, low the primary only.
func channelLimit(priority string) int {
	switch priority {
	case PriorityNormal:
		return 2
	case PriorityLow:
		return 1
	default:
		return 99
	}
}

// zoneState returns the connectivity in force for an event's zone; no zone is the node's
// own link, online.
func zoneState(zone *Zone, now time.Time) string {
	if zone == nil {
		return ConnOnline
	}
	return zone.Connectivity.StateAt(now)
}

// available reports whether a channel has a target for ev: rest_full needs a webhook
// subscribed to event.created (or a device queue, which planDelivery counts), sms a
// gateway and a phone to send to.
func (e *Engine) available(cfg *tenantConfig, ev *Event, ch string) bool {
	switch ch {
	case ChannelREST:
		return cfg.wantsWebhook(HookEventCreated)
	case ChannelSMS:
		return e.sender.SMSAvailable() && len(cfg.smsRecipients(ev)) > 0
	}
	return false
}

// planDelivery decides an event's channels and writes the event with its first delivery
// messages (all of them for a critical event). An event of an offline zone is
// queued_offline and waits in the parked index of its zone until the zone can be reached.
// An event whose channels have no target yet is pending with its nominal primary channel
// and no plan, until a target appears (releaseWaiting).
func (e *Engine) planDelivery(tx Tx, tenantID string, cfg *tenantConfig, zone *Zone, ev *Event) error {
	now := e.clock.Now()
	nominal := nominalChannels(zoneState(zone, now))
	devices, err := eventDevices(tx, tenantID, ev) // the device queues of rest_full
	if err != nil {
		return err
	}
	var plan []string
	for _, ch := range nominal {
		if len(plan) < channelLimit(ev.Priority) && (e.available(cfg, ev, ch) || ch == ChannelREST && len(devices) > 0) {
			plan = append(plan, ch)
		}
	}
	ev.Delivery = DeliveryState{Plan: plan}
	switch {
	case len(nominal) == 0:
		ev.Status, ev.ChannelSelected = EventQueuedOffline, ChannelQueued
	case len(plan) == 0:
		ev.Status, ev.ChannelSelected = EventPending, nominal[0]
	default:
		ev.Status, ev.ChannelSelected = EventPending, plan[0]
	}
	if len(nominal) == 0 {
		if err := tx.ParkEvent(tenantID, zoneCodeOf(ev), ev.ID); err != nil {
			return err
		}
	}
	if len(plan) == 0 {
		return tx.PutEvent(tenantID, ev)
	}
	n := 1
	if ev.Priority == PriorityCritical {
		n = len(plan)
	}
	for range n {
		if err := e.startNextChannel(tx, cfg, ev); err != nil {
			return err
		}
	}
	return tx.PutEvent(tenantID, ev)
}

func zoneCodeOf(ev *Event) string {
	if ev.ZoneCode == nil {
		return ""
	}
	return *ev.ZoneCode
}

// startNextChannel writes the messages of the event's next planned channel. The caller
// stores the event.
func (e *Engine) startNextChannel(tx Tx, cfg *tenantConfig, ev *Event) error {
	d := &ev.Delivery
	if d.Started >= len(d.Plan) {
		return nil
	}
	ch := d.Plan[d.Started]
	d.Started++
	ev.ChannelsAttempted = append(ev.ChannelsAttempted, ch)
	ev.UpdatedAt = At(e.clock.Now())
	var n int
	var err error
	switch ch {
	case ChannelREST:
		n, err = e.webhookMessages(tx, cfg, HookEventCreated, outboxTag{eventID: ev.ID, channel: ChannelREST}, ev)
		if err == nil {
			var queued int
			queued, err = e.queueEvent(tx, cfg.tenant.ID, ev)
			n += queued
		}
	case ChannelSMS:
		n, err = e.smsMessages(tx, cfg, ev)
	}
	if err != nil {
		return err
	}
	d.Outstanding += n
	return nil
}

// smsMessages writes one SMS of the event's FR1 line per recipient.
func (e *Engine) smsMessages(tx Tx, cfg *tenantConfig, ev *Event) (int, error) {
	text, err := EncodeSMS(ev.ID, ev.Priority, ev.Type, zoneCodeOf(ev), ev.Lat, ev.Lng)
	if err != nil {
		return 0, err
	}
	now := At(e.clock.Now())
	n := 0
	for _, to := range cfg.smsRecipients(ev) {
		o := &OutboxEntry{ID: NewID(), TenantID: cfg.tenant.ID, Kind: OutboxSMS, To: to, Text: text,
			EventID: ev.ID, Channel: ChannelSMS, DueAt: now, CreatedAt: now}
		if err := e.enqueue(tx, o); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// releaseQueuedEvents plans the delivery of a zone's parked events once the zone can be
// reached again. It runs in the transaction that recorded the zone's new state.
func (e *Engine) releaseQueuedEvents(tx Tx, tenantID, zoneCode string) error {
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
func (e *Engine) releaseWaiting(tx Tx, tenantID string) error {
	since := e.clock.Now().Add(-waitingWindow)
	events, _, err := tx.Events(tenantID, EventFilter{Status: EventPending, Since: &since}, Page{Limit: waitingMax})
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
		var zone *Zone
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
func (e *Engine) releaseParked(tx Tx, tenantID string, zoneCode *string) error {
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
		if IsKind(err, KindNotFound) {
			if err := tx.UnparkEvent(tenantID, ref.ZoneCode, ref.EventID); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if ev.Status != EventPending && ev.Status != EventQueuedOffline {
			if err := tx.UnparkEvent(tenantID, ref.ZoneCode, ref.EventID); err != nil {
				return err
			}
			continue
		}
		var zone *Zone
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
func (e *Engine) settleDelivery(tx Tx, o *OutboxEntry, ok, settled bool) error {
	ev, err := tx.Event(o.TenantID, o.EventID)
	if IsKind(err, KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	cfg, err := e.tenantConfig(tx, o.TenantID)
	if err != nil {
		return err
	}
	now := At(e.clock.Now())
	d := &ev.Delivery
	if settled && d.Outstanding > 0 {
		d.Outstanding--
	}
	ev.UpdatedAt = now
	switch {
	case ok && ev.Status == EventPending:
		ev.Status, ev.DeliveredAt = EventDelivered, &now
		if err := e.count(tx, o.TenantID, now.Time, UsageDelta{Channel: ev.ChannelSelected, EventStatus: EventDelivered}); err != nil {
			return err
		}
		if _, err := e.webhookMessages(tx, cfg, HookEventDelivered, outboxTag{}, ev); err != nil {
			return err
		}
	case ok || ev.Status != EventPending:
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
			ev.Status = EventFailed
			if err := e.count(tx, o.TenantID, now.Time, UsageDelta{Channel: ev.ChannelSelected, EventStatus: EventFailed}); err != nil {
				return err
			}
			if _, err := e.webhookMessages(tx, cfg, HookEventFailed, outboxTag{}, ev); err != nil {
				return err
			}
		}
	}
	return tx.PutEvent(o.TenantID, ev)
}
