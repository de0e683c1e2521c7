package zones

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// Reachable reports whether a state lets events out of a zone's offline queue.
func Reachable(state string) bool { return state == model.ConnOnline || state == model.ConnDegraded }

// ReportConnectivity records a zone's link state reported by the field (POST
// /v1/connectivity/report) and answers the status in force. A report older than the
// zone's last one changes nothing. When the zone becomes reachable (online or degraded)
// after being offline or unknown, its queued events are released in the same
// transaction.
func (e *Registry) ReportConnectivity(ctx context.Context, p model.Principal, in model.ConnectivityReport, w *model.Write) (*model.ConnectivityStatus, error) {
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.ConnectivityStatus, error) { return e.reportConnectivityAs(tx, p, in) })
}

// reportConnectivityAs is ReportConnectivity within tx.
func (e *Registry) reportConnectivityAs(tx model.Tx, p model.Principal, in model.ConnectivityReport) (*model.ConnectivityStatus, error) {
	if err := p.Require(model.PermConnectivityReport); err != nil {
		return nil, err
	}
	return e.reportConnectivity(tx, p.TenantID, in)
}

// reportConnectivity is ReportConnectivity once the caller is admitted (a device sync's
// connectivity item too).
func (e *Registry) reportConnectivity(tx model.Tx, tenantID string, in model.ConnectivityReport) (*model.ConnectivityStatus, error) {
	now := e.clock.Now()
	at, err := in.Validate(now)
	if err != nil {
		return nil, err
	}
	if !model.ValidZoneCode(in.ZoneCode) {
		return nil, model.Invalid("zone_code", "zone_code %s names no zone", model.Quote(in.ZoneCode))
	}
	z, err := tx.Zone(tenantID, in.ZoneCode)
	if model.IsKind(err, model.KindNotFound) {
		return nil, model.Invalid("zone_code", "zone_code %s names no zone", model.Quote(in.ZoneCode))
	}
	if err != nil {
		return nil, err
	}
	c := z.Connectivity
	if c.LastReportAt != nil && at.Before(c.LastReportAt.Time) {
		st := z.ConnectivityAt(now) // out of order: the newer report stands
		return &st, nil
	}
	before := c.StateAt(now)
	if c.Since == nil || c.StateAt(at.Time) != in.State {
		since := at
		c.Since = &since
	}
	c.State, c.LastReportAt = in.State, &at
	c.DeviceID, c.SignalDBM, c.Network = in.DeviceID, in.SignalDBM, in.Network
	z.Connectivity = c
	if err := tx.PutZone(tenantID, z); err != nil {
		return nil, err
	}
	if !Reachable(before) && Reachable(c.StateAt(now)) {
		if err := e.releaseQueued(tx, tenantID, z.Code); err != nil {
			return nil, err
		}
	}
	st := z.ConnectivityAt(now)
	return &st, e.publish(tx, tenantID, StreamConnectivity, model.PermZonesRead, "", st)
}

// ZoneConnectivity returns the connectivity in force now in one zone of the principal's
// tenant (GET /v1/connectivity/status?zone_code=…).
func (e *Registry) ZoneConnectivity(ctx context.Context, p model.Principal, code string) (*model.ConnectivityStatus, error) {
	z, err := e.storedZone(ctx, p, code)
	if err != nil {
		return nil, err
	}
	st := z.ConnectivityAt(e.clock.Now())
	return &st, nil
}

// ZonesConnectivity lists the connectivity in force now in a page of the principal's
// tenant's zones, ordered by code (GET /v1/connectivity/status without zone_code).
func (e *Registry) ZonesConnectivity(ctx context.Context, p model.Principal, page model.Page) ([]model.ConnectivityStatus, string, error) {
	zones, next, err := e.zonePage(ctx, p, page)
	if err != nil {
		return nil, "", err
	}
	now := e.clock.Now()
	out := make([]model.ConnectivityStatus, len(zones))
	for i := range zones {
		out[i] = zones[i].ConnectivityAt(now)
	}
	return out, next, nil
}
