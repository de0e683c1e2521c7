package admin

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// OpSMSSetup returns what a tenant's SMS gateway needs (`fieldrelay sms setup`).
const OpSMSSetup = "sms.setup"

// SMSSetupArgs are the arguments of sms.setup.
type SMSSetupArgs struct {
	Tenant string `json:"tenant"`
}

func smsSetup(ctx context.Context, eng *engine.Engine, in SMSSetupArgs) (*model.SMSSetup, error) {
	if in.Tenant == "" {
		return nil, model.Invalid("tenant", "tenant is required")
	}
	return eng.AdminSMSSetup(ctx, in.Tenant)
}
