package model

import (
	"strings"
	"time"
)

// Usage periods of GET /v1/tenant/usage.
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
	PeriodYear  = "year"
)

// usagePeriods holds, per period, how many periods a report shows by default and at most.
var usagePeriods = map[string]struct{ def, max int }{
	PeriodDay:   {30, 366},
	PeriodMonth: {12, 120},
	PeriodYear:  {5, 50},
}

// UsageQuery is the query of GET /v1/tenant/usage: a period and an optional range of
// dates (YYYY-MM-DD or RFC 3339, UTC, inclusive).
type UsageQuery struct {
	Period string
	From   string
	To     string
}

// UsageReport answers GET /v1/tenant/usage: one entry per period of the range, oldest
// first, periods without activity included, and the totals of the range.
type UsageReport struct {
	Period string        `json:"period"`
	From   string        `json:"from"`
	To     string        `json:"to"`
	Data   []UsagePeriod `json:"data"`
	Count  int           `json:"count"`
	Totals UsageCounts   `json:"totals"`
}

// UsagePeriod is the usage of one day, month or year.
type UsagePeriod struct {
	// Period names it: 2026-06-09, 2026-06 or 2026.
	Period string `json:"period"`
	// Start is its first instant; End the first instant after it.
	Start Time `json:"start"`
	End   Time `json:"end"`
	UsageCounts
}

// UsageCounts are the counters of a period.
type UsageCounts struct {
	Events            EventUsage `json:"events"`
	Dispatches        uint64     `json:"dispatches"`
	MissionsCompleted uint64     `json:"missions_completed"`
	MissionsFailed    uint64     `json:"missions_failed"`
	SyncBatches       uint64     `json:"sync_batches"`
	APIRequests       uint64     `json:"api_requests"`
	SMS               uint64     `json:"sms"`
}

// EventUsage counts accepted events by channel_selected and by priority, and the events
// that reached delivered or failed.
type EventUsage struct {
	Total      uint64            `json:"total"`
	ByChannel  map[string]uint64 `json:"by_channel"`
	ByPriority map[string]uint64 `json:"by_priority"`
	Delivered  uint64            `json:"delivered"`
	Failed     uint64            `json:"failed"`
}

// add adds n to the counter named metric.
func (c *UsageCounts) Add(metric string, n uint64) {
	switch {
	case strings.HasPrefix(metric, UsageEventsByChannel):
		c.Events.ByChannel[metric[len(UsageEventsByChannel):]] += n
		c.Events.Total += n
	case strings.HasPrefix(metric, UsageEventsByPriority):
		c.Events.ByPriority[metric[len(UsageEventsByPriority):]] += n
	case metric == UsageEventsDelivered:
		c.Events.Delivered += n
	case metric == UsageEventsFailed:
		c.Events.Failed += n
	case metric == UsageDispatches:
		c.Dispatches += n
	case metric == UsageMissionsDone:
		c.MissionsCompleted += n
	case metric == UsageMissionsFailed:
		c.MissionsFailed += n
	case metric == UsageSyncBatches:
		c.SyncBatches += n
	case metric == UsageAPIRequests:
		c.APIRequests += n
	case metric == UsageSMS:
		c.SMS += n
	}
}

// periodStart returns the start of the period holding t (UTC).
func PeriodStart(period string, t time.Time) time.Time {
	t = t.UTC()
	switch period {
	case PeriodYear:
		return time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	case PeriodMonth:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	default:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
}

// nextPeriod returns the start of the period after the one starting at t.
func NextPeriod(period string, t time.Time) time.Time {
	switch period {
	case PeriodYear:
		return t.AddDate(1, 0, 0)
	case PeriodMonth:
		return t.AddDate(0, 1, 0)
	default:
		return t.AddDate(0, 0, 1)
	}
}

// parseUsageDate reads a date (YYYY-MM-DD) or an RFC 3339 timestamp.
func parseUsageDate(field, s string) (time.Time, error) {
	if t, err := time.Parse(DayLayout, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, Invalid(field, "%s must be a date (YYYY-MM-DD) or an RFC 3339 timestamp", field)
	}
	return t.UTC(), nil
}

// periods checks the query and returns the starts of its first and last periods.
func (q UsageQuery) Periods(now time.Time) (first, last time.Time, err error) {
	if q.Period == "" {
		q.Period = PeriodDay
	}
	lim, ok := usagePeriods[q.Period]
	if !ok {
		return first, last, Invalid("period", "period must be one of day, month, year")
	}
	to := now
	if q.To != "" {
		if to, err = parseUsageDate("to", q.To); err != nil {
			return first, last, err
		}
	}
	last = PeriodStart(q.Period, to)
	if q.From != "" {
		from, err := parseUsageDate("from", q.From)
		if err != nil {
			return first, last, err
		}
		if from.After(to) {
			return first, last, Invalid("to", "to is before from")
		}
		first = PeriodStart(q.Period, from)
	} else {
		first = last
		for range lim.def - 1 {
			first = PeriodStart(q.Period, first.Add(-time.Nanosecond))
		}
	}
	n := 0
	for p := first; !p.After(last); p = NextPeriod(q.Period, p) {
		if n++; n > lim.max {
			return first, last, Invalid("from", "a %s report covers at most %d periods", q.Period, lim.max)
		}
	}
	return first, last, nil
}
