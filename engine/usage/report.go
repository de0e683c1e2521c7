package usage

import (
	"context"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func newUsageCounts() model.UsageCounts {
	c := model.UsageCounts{Events: model.EventUsage{ByChannel: map[string]uint64{}, ByPriority: map[string]uint64{}}}
	for _, ch := range model.StatChannels {
		c.Events.ByChannel[ch] = 0
	}
	for _, p := range model.Priorities {
		c.Events.ByPriority[p] = 0
	}
	return c
}

func periodName(period string, t time.Time) string {
	switch period {
	case model.PeriodYear:
		return t.Format("2006")
	case model.PeriodMonth:
		return t.Format("2006-01")
	default:
		return t.Format(model.DayLayout)
	}
}

// Usage answers GET /v1/tenant/usage for p's tenant (usage:read). The API requests
// counted in memory since the last flush are included in today's period.
func (e *Counter) Usage(ctx context.Context, p model.Principal, q model.UsageQuery) (*model.UsageReport, error) {
	if err := p.Require(model.PermUsageRead); err != nil {
		return nil, err
	}
	if q.Period == "" {
		q.Period = model.PeriodDay
	}
	now := e.clock.Now().UTC()
	first, last, err := q.Periods(now)
	if err != nil {
		return nil, err
	}
	end := model.NextPeriod(q.Period, last)
	rep := &model.UsageReport{Period: q.Period, From: first.Format(model.DayLayout),
		To: end.AddDate(0, 0, -1).Format(model.DayLayout), Totals: newUsageCounts()}
	index := map[string]int{}
	for s := first; s.Before(end); s = model.NextPeriod(q.Period, s) {
		index[periodName(q.Period, s)] = len(rep.Data)
		rep.Data = append(rep.Data, model.UsagePeriod{Period: periodName(q.Period, s), Start: model.At(s),
			End: model.At(model.NextPeriod(q.Period, s)), UsageCounts: newUsageCounts()})
	}
	rep.Count = len(rep.Data)
	// Held against a flush, so that pending requests are counted once.
	e.requests.mu.Lock()
	defer e.requests.mu.Unlock()
	var counters []model.UsageCounter
	err = e.store.View(ctx, func(tx model.Tx) (err error) {
		counters, err = tx.UsageCounters(p.TenantID, rep.From, rep.To)
		return err
	})
	if err != nil {
		return nil, err
	}
	if n := e.pendingRequests(p.TenantID); n > 0 {
		counters = append(counters, model.UsageCounter{Day: now.Format(model.DayLayout), Metric: model.UsageAPIRequests, N: n})
	}
	for _, c := range counters {
		day, err := time.Parse(model.DayLayout, c.Day)
		if err != nil {
			continue
		}
		i, ok := index[periodName(q.Period, day)]
		if !ok {
			continue
		}
		rep.Data[i].Add(c.Metric, c.N)
		rep.Totals.Add(c.Metric, c.N)
	}
	return rep, nil
}
