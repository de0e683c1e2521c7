package usage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// PlanDefault is the entry of PlanTable for countries without their own.
const PlanDefault = "default"

// DefaultPlans returns the compiled-in price list (list prices, illustrative; an
// operator gives its own with --plans-file).
func DefaultPlans() model.PlanTable {
	row := func(cur string, fee [3]float64, disp [3]float64, sms float64) model.CountryPlans {
		return model.CountryPlans{Currency: cur,
			Plans: map[string]model.PlanPrice{
				model.PlanStarter:         {MonthlyFee: fee[0], IncludedDispatches: 500, DispatchPrice: disp[0]},
				model.PlanCore:            {MonthlyFee: fee[1], IncludedDispatches: 5000, DispatchPrice: disp[1]},
				model.PlanMissionCritical: {MonthlyFee: fee[2], IncludedDispatches: 50000, DispatchPrice: disp[2]},
			},
			ChannelCosts: map[string]float64{model.ChannelREST: 0, model.ChannelSMS: sms, model.ChannelQueued: 0}}
	}
	return model.PlanTable{
		PlanDefault: row("EUR", [3]float64{490, 1490, 4900}, [3]float64{0.50, 0.30, 0.15}, 0.08),
		"FR":        row("EUR", [3]float64{490, 1490, 4900}, [3]float64{0.50, 0.30, 0.15}, 0.07),
		"DE":        row("EUR", [3]float64{490, 1490, 4900}, [3]float64{0.50, 0.30, 0.15}, 0.09),
		"ES":        row("EUR", [3]float64{450, 1350, 4500}, [3]float64{0.45, 0.27, 0.14}, 0.06),
		"GB":        row("GBP", [3]float64{420, 1290, 4200}, [3]float64{0.45, 0.26, 0.13}, 0.04),
		"US":        row("USD", [3]float64{520, 1590, 5200}, [3]float64{0.55, 0.33, 0.16}, 0.01),
	}
}

var (
	countryRE  = regexp.MustCompile(`^[A-Z]{2}$`)
	currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)
)

// ParsePlans reads a price list in the shape of PlanTable. Every entry must be complete:
// a "default" entry, two-letter upper-case country codes, a three-letter currency, the
// three plans and no other, costs for the three channels, no negative number and no
// unknown field; the error says what is wrong where.
func ParsePlans(data []byte) (model.PlanTable, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var t model.PlanTable
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("not a price list: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not a price list: more than one JSON value")
	}
	if _, ok := t[PlanDefault]; !ok {
		return nil, fmt.Errorf(`the price list needs a "default" entry`)
	}
	plans := []string{model.PlanStarter, model.PlanCore, model.PlanMissionCritical}
	for country, c := range t {
		if country != PlanDefault && !countryRE.MatchString(country) {
			return nil, fmt.Errorf("%s: a country is a two-letter upper-case ISO 3166-1 code or \"default\"", model.Quote(country))
		}
		if !currencyRE.MatchString(c.Currency) {
			return nil, fmt.Errorf("%s: currency must be a three-letter upper-case ISO 4217 code", country)
		}
		if len(c.Plans) != len(plans) {
			return nil, fmt.Errorf("%s: plans must hold exactly starter, core and mission-critical", country)
		}
		for name, p := range c.Plans {
			if !slices.Contains(plans, name) {
				return nil, fmt.Errorf("%s: unknown plan %s", country, model.Quote(name))
			}
			if p.MonthlyFee < 0 || p.DispatchPrice < 0 || p.IncludedDispatches < 0 {
				return nil, fmt.Errorf("%s: plan %s has a negative price or quantity", country, name)
			}
		}
		if len(c.ChannelCosts) != len(model.StatChannels) {
			return nil, fmt.Errorf("%s: channel_costs must hold exactly rest_full, sms and queued_offline", country)
		}
		for ch, v := range c.ChannelCosts {
			if !slices.Contains(model.StatChannels, ch) {
				return nil, fmt.Errorf("%s: unknown channel %s in channel_costs", country, model.Quote(ch))
			}
			if v < 0 {
				return nil, fmt.Errorf("%s: channel %s has a negative cost", country, ch)
			}
		}
	}
	return t, nil
}

// Billing answers GET /v1/tenant/billing for p's tenant (tenant:admin): its plan and
// rate limit, this year's billable dispatches (from the ledger), events and SMS (from
// the usage counters), the channel costs of its country and the whole price list. It
// reads everything in one read transaction.
func (e *Counter) Billing(ctx context.Context, p model.Principal) (*model.Billing, error) {
	if err := p.Require(model.PermTenantAdmin); err != nil {
		return nil, err
	}
	now := e.clock.Now().UTC()
	from := model.PeriodStart(model.PeriodYear, now)
	to := model.NextPeriod(model.PeriodYear, from)
	var t *model.Tenant
	var dispatches int
	var counters []model.UsageCounter
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		if t, err = tx.Tenant(p.TenantID); err != nil {
			return err
		}
		if dispatches, err = tx.LedgerCount(p.TenantID, "dispatch", from, to); err != nil {
			return err
		}
		counters, err = tx.UsageCounters(p.TenantID, from.Format(model.DayLayout), to.AddDate(0, 0, -1).Format(model.DayLayout))
		return err
	})
	if err != nil {
		return nil, err
	}
	year := newUsageCounts()
	for _, c := range counters {
		year.Add(c.Metric, c.N)
	}
	row, ok := e.plans[t.Country]
	if !ok {
		row = e.plans[PlanDefault]
	}
	b := &model.Billing{Plan: t.LicenseType, Country: t.Country, Currency: row.Currency,
		PlanPrice: row.Plans[t.LicenseType], ChannelCosts: row.ChannelCosts, PlansByCountry: e.plans,
		AnnualUsage: model.AnnualUsage{Year: from.Year(), From: model.At(from), To: model.At(to),
			BillableDispatches: uint64(dispatches), Events: year.Events.Total, SMS: year.SMS}}
	if n := model.PlanRateLimit(t.LicenseType); n > 0 {
		b.RateLimitPerMin = &n
	}
	return b, nil
}
