package model

// PlanTable is the price list of GET /v1/tenant/billing: country code (ISO 3166-1
// alpha-2) or "default" → the prices there. It is compiled in (DefaultPlans) and can be
// replaced by a JSON file of the same shape (`serve --plans-file`, ParsePlans).
type PlanTable map[string]CountryPlans

// CountryPlans are the prices of one country.
type CountryPlans struct {
	// Currency is an ISO 4217 code.
	Currency string `json:"currency"`
	// Plans holds the three plans by name.
	Plans map[string]PlanPrice `json:"plans"`
	// ChannelCosts is the price of one message on each channel.
	ChannelCosts map[string]float64 `json:"channel_costs"`
}

// PlanPrice is the price of a plan in one country.
type PlanPrice struct {
	MonthlyFee float64 `json:"monthly_fee"`
	// IncludedDispatches are the billable dispatches of a month that the fee covers;
	// DispatchPrice is the price of each one beyond.
	IncludedDispatches int     `json:"included_dispatches"`
	DispatchPrice      float64 `json:"dispatch_price"`
}

// Billing answers GET /v1/tenant/billing.
type Billing struct {
	Plan string `json:"plan"`
	// RateLimitPerMin is null for an unlimited plan.
	RateLimitPerMin *int   `json:"rate_limit_per_min"`
	Country         string `json:"country"`
	Currency        string `json:"currency"`
	// PlanPrice is the price of the tenant's plan in its country.
	PlanPrice    PlanPrice          `json:"plan_price"`
	AnnualUsage  AnnualUsage        `json:"annual_usage"`
	ChannelCosts map[string]float64 `json:"channel_costs"`
	// PlansByCountry is the whole price list.
	PlansByCountry PlanTable `json:"plans_by_country"`
}

// AnnualUsage counts the billable work of the current calendar year (UTC), From
// inclusive, To exclusive.
type AnnualUsage struct {
	Year int  `json:"year"`
	From Time `json:"from"`
	To   Time `json:"to"`
	// BillableDispatches are the dispatches of the ledger.
	BillableDispatches uint64 `json:"billable_dispatches"`
	// Events are the events accepted; SMS the messages the gateway accepted.
	Events uint64 `json:"events"`
	SMS    uint64 `json:"sms"`
}
