package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/alerts"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/upstream"
)

// The alerts of states no transaction of the cause reports (docs/decisions/0262-health-alerts.md):
// a device gone silent while its team is on a mission, and the SMS gateway down. A watch
// looks every WatchEvery, one transaction a tenant, raising and closing them.

// WatchEvery is how often the watch runs.
const WatchEvery = time.Minute

// DeviceSilentAfter is how long a device of a team on a mission may go without a sync
// before device_silent: the quiet time after which the crew's changes go by SMS
// (CrewSMSQuiet, docs/decisions/0153-crew-sms.md).
const DeviceSilentAfter = CrewSMSQuiet

// gatewaySubject is the subject of the sms_gateway_down alert: one gateway a node.
const gatewaySubject = "gateway"

// watchLoop runs the watch every WatchEvery until ctx ends; on a shared store, once per
// period across the processes.
func (e *Engine) watchLoop(ctx context.Context) {
	t := time.NewTicker(WatchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, err := e.claimPeriod(ctx, "alerts_watch", WatchEvery)
		if ok && err == nil {
			err = e.Watch(ctx)
		}
		if err != nil && ctx.Err() == nil {
			e.log.Error("alerts watch", "err", err)
		}
	}
}

// Watch runs the watch once: for every tenant, in one transaction each, device_silent for
// each device of a team on a mission with no sync for DeviceSilentAfter (closed once it
// syncs, or its team is back), sms_gateway_down while the node's SMS gateway is down
// (closed once it is up), downstream_lagging while the upstream link is up but the site
// does not catch up with its central node (watchDownstream), and the escalation of the
// alerts left unacknowledged (escalate).
// Tests run it on the fake clock.
func (e *Engine) Watch(ctx context.Context) error {
	var tenants []model.Tenant
	if err := e.store.View(ctx, func(tx model.Tx) (err error) {
		tenants, err = tx.Tenants()
		return err
	}); err != nil {
		return err
	}
	gateway := e.SMSGatewayState()
	for i := range tenants {
		id := tenants[i].ID
		err := e.store.Update(ctx, func(tx model.Tx) error {
			if err := e.watchDevices(tx, id); err != nil {
				return err
			}
			if err := e.watchGateway(tx, id, gateway); err != nil {
				return err
			}
			if err := e.watchDownstream(tx, id); err != nil {
				return err
			}
			return e.escalate(tx, id)
		})
		if err != nil {
			e.log.Error("alerts watch", "tenant", id, "err", err)
		}
	}
	return nil
}

// watchDevices raises device_silent for the silent devices of a tenant's teams on a
// mission, and closes it for the devices that synced since or whose team is back.
func (e *Engine) watchDevices(tx model.Tx, tenantID string) error {
	now := e.clock.Now()
	silent := map[string]bool{}
	teams, err := tx.Teams(tenantID)
	if err != nil {
		return err
	}
	for i := range teams {
		tm := &teams[i]
		if tm.Status != TeamOnMission {
			continue
		}
		ids, err := tx.DevicesOfTeam(tenantID, tm.ID)
		if err != nil {
			return err
		}
		for _, id := range ids {
			d, err := tx.Device(tenantID, id)
			if model.IsKind(err, model.KindNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			last := d.RegisteredAt
			if d.Sync.LastSyncAt != nil {
				last = *d.Sync.LastSyncAt
			}
			if d.Credential != nil && d.Credential.RevokedAt != nil || now.Sub(last.Time) < DeviceSilentAfter {
				continue
			}
			silent[d.ID] = true
			_, err = alerts.Raise(e.Book, tx, tenantID, model.AlertInput{Kind: model.AlertDeviceSilent, Subject: d.ID,
				Priority: model.PriorityHigh, TeamID: tm.ID, Message: fmt.Sprintf("Device %s of %s silent for %d minutes on a mission",
					model.Quote(d.Name), tm.Name, int(now.Sub(last.Time)/time.Minute))})
			if err != nil {
				return err
			}
		}
	}
	var gone []string
	for pg := (model.Page{Limit: 200}); ; {
		open, next, err := tx.Alerts(tenantID, model.AlertFilter{Kind: model.AlertDeviceSilent}, pg)
		if err != nil {
			return err
		}
		for i := range open {
			if subject := open[i].Key[len(model.AlertDeviceSilent)+1:]; !silent[subject] {
				gone = append(gone, subject)
			}
		}
		if next == "" {
			break
		}
		pg.Cursor = next
	}
	for _, subject := range gone {
		if err := alerts.Close(e.Book, tx, tenantID, model.AlertDeviceSilent, subject); err != nil {
			return err
		}
	}
	return nil
}

// watchGateway raises sms_gateway_down while the gateway is down and closes it once up;
// an unknown state (no probe or call yet) changes nothing.
func (e *Engine) watchGateway(tx model.Tx, tenantID, state string) error {
	switch state {
	case "down":
		_, err := alerts.Raise(e.Book, tx, tenantID, model.AlertInput{Kind: model.AlertSMSGatewayDown, Subject: gatewaySubject,
			Priority: model.PriorityHigh, Message: "The SMS gateway is down: SMS waits, and degraded zones cannot be reached"})
		return err
	case "up":
		return alerts.Close(e.Book, tx, tenantID, model.AlertSMSGatewayDown, gatewaySubject)
	}
	return nil
}

// upstreamSubject is the subject of the upstream_down alert: one link a tenant.
const upstreamSubject = "upstream"

// upstreamHealth raises upstream_down when a push of the tenant's link failed and closes
// it when one succeeds or the link changes, within the transaction that records it.
func (e *Engine) upstreamHealth(tx upstream.Tx, tenantID, lastError string) error {
	if lastError == "" {
		return alerts.Close(e.Book, tx, tenantID, model.AlertUpstreamDown, upstreamSubject)
	}
	_, err := alerts.Raise(e.Book, tx, tenantID, model.AlertInput{Kind: model.AlertUpstreamDown, Subject: upstreamSubject,
		Priority: model.PriorityHigh, Message: "The upstream link is down: " + lastError})
	return err
}

// escalate sends by SMS, once, each open alert of a tenant still unacknowledged
// alert_escalation_min after it was raised to the supervisors on duty (active
// operational supervisors and company admins with on_duty and a phone), through the SMS
// outbox (usage, the per-recipient limits), and records escalated_at
// (docs/decisions/0263-alert-escalation.md). Nothing without a gateway, with the setting
// off or with nobody on duty: an alert is escalated once someone can receive it.
func (e *Engine) escalate(tx model.Tx, tenantID string) error {
	t, err := tx.Tenant(tenantID)
	if err != nil || t.AlertEscalationMin == 0 || !e.sender.SMSAvailable() {
		return err
	}
	now := model.At(e.clock.Now())
	after := time.Duration(t.AlertEscalationMin) * time.Minute
	var due []model.Alert
	for pg := (model.Page{Limit: 200}); ; {
		open, next, err := tx.Alerts(tenantID, model.AlertFilter{}, pg)
		if err != nil {
			return err
		}
		for _, a := range open {
			if a.AckedAt == nil && a.EscalatedAt == nil && now.Sub(a.RaisedAt.Time) >= after {
				due = append(due, a)
			}
		}
		if next == "" {
			break
		}
		pg.Cursor = next
	}
	if len(due) == 0 {
		return nil
	}
	phones, err := onDutyPhones(tx, tenantID)
	if err != nil || len(phones) == 0 {
		return err
	}
	for i := range due {
		a := &due[i]
		text := fmt.Sprintf("FieldRelay alert not acknowledged for %d min (%s): %s", int(now.Sub(a.RaisedAt.Time)/time.Minute),
			a.Priority, a.Message)
		for _, to := range phones {
			if err := e.enqueue(tx, &model.OutboxEntry{ID: model.NewID(), TenantID: tenantID, Kind: model.OutboxSMS, To: to,
				Text: text, DueAt: now, CreatedAt: now}); err != nil {
				return err
			}
		}
		if err := alerts.Escalated(e.Book, tx, tenantID, a); err != nil {
			return err
		}
	}
	return nil
}

// onDutyPhones lists the distinct phones of a tenant's supervisors on duty: active
// operational supervisors and company admins marked on_duty with a phone.
func onDutyPhones(tx model.Tx, tenantID string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for pg := (model.Page{Limit: 200}); ; {
		users, next, err := tx.Users(tenantID, pg)
		if err != nil {
			return nil, err
		}
		for _, u := range users {
			if u.OnDuty && u.Phone != "" && u.Status == UserActive && !seen[u.Phone] &&
				(u.RBACLevel == model.RoleOperationalSupervisor || u.RBACLevel == model.RoleCompanyAdmin) {
				seen[u.Phone] = true
				out = append(out, u.Phone)
			}
		}
		if next == "" {
			return out, nil
		}
		pg.Cursor = next
	}
}
