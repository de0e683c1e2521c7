package engine

import (
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/usage"
)

// The use cases of usage and billing are usage.Counter's, embedded in the Engine.

// PlanDefault is the entry of PlanTable for countries without their own.
const PlanDefault = usage.PlanDefault

// DefaultPlans is the price list of GET /v1/tenant/billing when none is given.
func DefaultPlans() model.PlanTable { return usage.DefaultPlans() }

// ParsePlans reads a price list (the --plans file of serve).
func ParsePlans(data []byte) (model.PlanTable, error) { return usage.ParsePlans(data) }

// count adds d to the usage of tenantID on the day of at, within tx (usage.Counter.Count).
func (e *Engine) count(tx model.TxCommit, tenantID string, at time.Time, d model.UsageDelta) error {
	return usage.Count(e.Counter, tx, tenantID, at, d)
}
