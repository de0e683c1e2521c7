package engine_test

import (
	"context"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestAutoDispatch_NeverATeamAtASite: the central node's auto-dispatch never sends a team
// it routes to a site to one of its own events (docs/decisions/0202-team-status-up.md):
// the event asks for a supervisor instead; the same team without a site is sent.
func TestAutoDispatch_NeverATeamAtASite(t *testing.T) {
	f := newUpstreamFix(t)
	ctx := context.Background()
	admin := model.Principal{TenantID: f.tenant.ID, TenantActive: true, Role: model.RoleCompanyAdmin}
	route := func(site string) {
		t.Helper()
		mustDo(t, func() error {
			_, err := f.e.UpdateTeam(ctx, tenantAdmin(f.tenant.ID), f.team.ID, model.TeamPatch{SiteID: &site}, nil)
			return err
		})
	}
	ingest := func(key string) model.EventAccepted {
		t.Helper()
		return mustIngest(t, f.e, admin, model.EventInput{Type: "FIRE", Priority: "critical", Vertical: "emergency",
			IdempotencyKey: key, ZoneCode: "north"})
	}

	route(f.node.ID)
	if acc := ingest("at-site"); acc.Dispatch != nil || !acc.RequiresManual {
		t.Fatalf("a central event auto-dispatched the team of a site: %+v", acc)
	}
	route("")
	if acc := ingest("central"); acc.Dispatch == nil || acc.Dispatch.TeamID != f.team.ID {
		t.Fatalf("the same team without a site: %+v", acc)
	}
}
