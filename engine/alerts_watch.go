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
// syncs, or its team is back), and sms_gateway_down while the node's SMS gateway is down
// (closed once it is up). Tests run it on the fake clock.
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
			return e.watchGateway(tx, id, gateway)
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
