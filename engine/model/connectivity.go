package model

import (
	"math"
	"time"
)

// Zone connectivity states (docs/rules.md, Delivery).
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
func (in *ConnectivityReport) Validate(now time.Time) (Time, error) {
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
	if err := CheckName("device_id", in.DeviceID, 64); err != nil {
		return Time{}, err
	}
	if s := in.SignalDBM; s != nil && (math.IsNaN(*s) || *s < -150 || *s > 0) {
		return Time{}, Invalid("signal_dbm", "signal_dbm must be between -150 and 0")
	}
	if err := CheckName("network", in.Network, 32); err != nil {
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
