package engine

import (
	"context"
	"math"
	"time"
)

// Zone connectivity states (API.md, Delivery).
const (
	ConnOnline   = "online"
	ConnDegraded = "degraded"
	ConnOffline  = "offline"
	ConnUnknown  = "unknown"
)

// ConnectivityStaleAfter is how long a report holds: a zone with no report for this long
// is unknown.
const ConnectivityStaleAfter = 10 * time.Minute

// MaxReportAhead is how far in the future a reported_at may be (clock skew of a device);
// such a report counts as made now.
const MaxReportAhead = 2 * time.Minute

// Connectivity is the link state of a zone as last reported. State is the reported state;
// StateAt tells the state in force at a time, staleness included. The device fields are
// those of the last report.
type Connectivity struct {
	State        string `json:"state"`
	LastReportAt *Time  `json:"last_report_at"`
	// Since is when the zone entered State.
	Since     *Time    `json:"since"`
	DeviceID  string   `json:"device_id,omitempty"`
	SignalDBM *float64 `json:"signal_dbm,omitempty"`
	Network   string   `json:"network,omitempty"`
}

// StateAt returns the state in force at now: unknown without a report in the last
// ConnectivityStaleAfter.
func (c Connectivity) StateAt(now time.Time) string {
	if c.LastReportAt == nil || c.State == "" || now.Sub(c.LastReportAt.Time) >= ConnectivityStaleAfter {
		return ConnUnknown
	}
	return c.State
}

// reachable reports whether a state lets events out of a zone's offline queue.
func reachable(state string) bool { return state == ConnOnline || state == ConnDegraded }

// ConnectivityReport is the body of POST /v1/connectivity/report (and the payload of a
// device sync item of kind connectivity).
type ConnectivityReport struct {
	ZoneCode  string   `json:"zone_code"`
	State     string   `json:"state"`
	DeviceID  string   `json:"device_id"`
	SignalDBM *float64 `json:"signal_dbm"`
	Network   string   `json:"network"`
	// ReportedAt is an RFC 3339 timestamp; now when absent.
	ReportedAt *string `json:"reported_at"`
}

// ConnectivityStatus is the connectivity in force in a zone (GET /v1/connectivity/status).
type ConnectivityStatus struct {
	ZoneCode     string `json:"zone_code"`
	State        string `json:"state"`
	LastReportAt *Time  `json:"last_report_at"`
	// Since is when the zone entered State: for a zone never reported, its creation; for
	// a stale report, the moment it went stale.
	Since *Time `json:"since"`
}

// ConnectivityAt returns the zone's connectivity in force at now.
func (z *Zone) ConnectivityAt(now time.Time) ConnectivityStatus {
	c := z.Connectivity
	st := ConnectivityStatus{ZoneCode: z.Code, State: c.StateAt(now), LastReportAt: c.LastReportAt}
	switch {
	case c.LastReportAt == nil:
		created := z.CreatedAt
		st.Since = &created
	case st.State == ConnUnknown:
		st.Since = TimePtr(c.LastReportAt.Add(ConnectivityStaleAfter))
	default:
		st.Since = c.Since
	}
	return st
}

// validate checks a report and returns the time it stands for.
func (in *ConnectivityReport) validate(now time.Time) (Time, error) {
	if in.ZoneCode == "" {
		return Time{}, Invalid("zone_code", "zone_code is required")
	}
	switch in.State {
	case ConnOnline, ConnDegraded, ConnOffline:
	case "":
		return Time{}, Invalid("state", "state is required")
	case ConnUnknown:
		return Time{}, Invalid("state", "state unknown cannot be reported: it is what a zone becomes without reports")
	default:
		return Time{}, Invalid("state", "state must be one of online, degraded, offline")
	}
	if err := checkLength("device_id", in.DeviceID, 64); err != nil {
		return Time{}, err
	}
	if s := in.SignalDBM; s != nil && (math.IsNaN(*s) || *s < -150 || *s > 0) {
		return Time{}, Invalid("signal_dbm", "signal_dbm must be between -150 and 0")
	}
	if err := checkLength("network", in.Network, 32); err != nil {
		return Time{}, err
	}
	at := At(now)
	if in.ReportedAt != nil {
		t, err := ParseTime(*in.ReportedAt)
		if err != nil {
			return Time{}, Invalid("reported_at", "reported_at must be an RFC 3339 timestamp")
		}
		if t.Sub(now) > MaxReportAhead {
			return Time{}, Invalid("reported_at", "reported_at is more than 2 minutes in the future")
		}
		if t.Before(now) {
			at = t
		}
	}
	return at, nil
}

// ReportConnectivity records a zone's link state reported by the field (POST
// /v1/connectivity/report) and answers the status in force. A report older than the
// zone's last one changes nothing. When the zone becomes reachable (online or degraded)
// after being offline or unknown, its queued events are released in the same
// transaction.
func (e *Engine) ReportConnectivity(tx Tx, p Principal, in ConnectivityReport) (*ConnectivityStatus, error) {
	if err := p.Require(PermConnectivityReport); err != nil {
		return nil, err
	}
	return e.reportConnectivity(tx, p.TenantID, in)
}

// reportConnectivity is ReportConnectivity once the caller is admitted (a device sync's
// connectivity item too).
func (e *Engine) reportConnectivity(tx Tx, tenantID string, in ConnectivityReport) (*ConnectivityStatus, error) {
	now := e.clock.Now()
	at, err := in.validate(now)
	if err != nil {
		return nil, err
	}
	if !ValidZoneCode(in.ZoneCode) {
		return nil, Invalid("zone_code", "zone_code %s names no zone", Quote(in.ZoneCode))
	}
	z, err := tx.Zone(tenantID, in.ZoneCode)
	if IsKind(err, KindNotFound) {
		return nil, Invalid("zone_code", "zone_code %s names no zone", Quote(in.ZoneCode))
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
	if !reachable(before) && reachable(c.StateAt(now)) {
		if err := e.releaseQueuedEvents(tx, tenantID, z.Code); err != nil {
			return nil, err
		}
	}
	st := z.ConnectivityAt(now)
	return &st, e.publish(tx, tenantID, StreamZoneConnectivity, PermZonesRead, "", st)
}

// ZoneConnectivity returns the connectivity in force now in one zone of the principal's
// tenant (GET /v1/connectivity/status?zone_code=…).
func (e *Engine) ZoneConnectivity(ctx context.Context, p Principal, code string) (*ConnectivityStatus, error) {
	z, err := e.storedZone(ctx, p, code)
	if err != nil {
		return nil, err
	}
	st := z.ConnectivityAt(e.clock.Now())
	return &st, nil
}

// ZonesConnectivity lists the connectivity in force now in a page of the principal's
// tenant's zones, ordered by code (GET /v1/connectivity/status without zone_code).
func (e *Engine) ZonesConnectivity(ctx context.Context, p Principal, page Page) ([]ConnectivityStatus, string, error) {
	zones, next, err := e.zonePage(ctx, p, page)
	if err != nil {
		return nil, "", err
	}
	now := e.clock.Now()
	out := make([]ConnectivityStatus, len(zones))
	for i := range zones {
		out[i] = zones[i].ConnectivityAt(now)
	}
	return out, next, nil
}
