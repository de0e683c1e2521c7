package upstream

import (
	"context"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// Links runs the use cases of upstream sync as the server and the command line call
// them: a tenant's link settings and status, and the pusher driven by hand. The engine
// embeds it, so that they are the Engine's.
type Links struct {
	r     *Runner
	frame writes.Frame
}

// NewLinks returns the use cases of r; frame is the engine's write frame.
func NewLinks(r *Runner, frame writes.Frame) *Links { return &Links{r: r, frame: frame} }

// SetUpstream sets the upstream of p's tenant (PUT /v1/tenant/upstream). It
// needs tenant:admin.
func (e *Links) SetUpstream(ctx context.Context, p model.Principal, in model.UpstreamInput, w *model.Write) (*model.UpstreamSettings, error) {
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.UpstreamSettings, error) {
		if err := p.Require(model.PermTenantAdmin); err != nil {
			return nil, err
		}
		return e.r.SetIn(tx, ownTenant(p), in)
	})
}

// AdminSetUpstream is SetUpstream for the tenant of a slug (the admin command).
func (e *Links) AdminSetUpstream(ctx context.Context, slug string, in model.UpstreamInput) (*model.UpstreamSettings, error) {
	return writes.Do(ctx, e.frame, "", nil, func(tx model.Tx) (*model.UpstreamSettings, error) {
		return e.r.SetIn(tx, BySlug(slug), in)
	})
}

// AdminPauseUpstream pauses or resumes the push of the tenant of a slug (the admin
// command); the change log keeps being written while paused.
func (e *Links) AdminPauseUpstream(ctx context.Context, slug string, paused bool) (*model.UpstreamSettings, error) {
	return writes.Do(ctx, e.frame, "", nil, func(tx model.Tx) (*model.UpstreamSettings, error) { return e.r.PauseIn(tx, slug, paused) })
}

// Upstream returns the upstream settings of p's tenant (GET /v1/tenant/upstream);
// KindNotFound when it has none. It needs tenant:admin.
func (e *Links) Upstream(ctx context.Context, p model.Principal) (*model.UpstreamSettings, error) {
	if err := p.Require(model.PermTenantAdmin); err != nil {
		return nil, err
	}
	return e.r.Settings(ctx, ownTenant(p))
}

// AdminUpstream is Upstream for the tenant of a slug (the admin command).
func (e *Links) AdminUpstream(ctx context.Context, slug string) (*model.UpstreamSettings, error) {
	return e.r.Settings(ctx, BySlug(slug))
}

// UpstreamStatus returns where the upstream sync of p's tenant stands (GET
// /v1/tenant/upstream/status). It needs tenant:admin.
func (e *Links) UpstreamStatus(ctx context.Context, p model.Principal) (*model.UpstreamStatus, error) {
	if err := p.Require(model.PermTenantAdmin); err != nil {
		return nil, err
	}
	return e.r.Status(ctx, ownTenant(p))
}

// UpstreamStatusOf is UpstreamStatus for the tenant of a slug (the admin command).
func (e *Links) UpstreamStatusOf(ctx context.Context, slug string) (*model.UpstreamStatus, error) {
	return e.r.Status(ctx, BySlug(slug))
}

// PullDownstream answers a site node's pull of the downstream log (POST
// /v1/devices/downstream). It needs devices:manage and a node device. A pull at the
// log's end that asks to wait is held until the log has news or the wait ends.
func (e *Links) PullDownstream(ctx context.Context, p model.Principal, in model.DownPullInput) (*model.DownPull, error) {
	return e.r.PullWait(ctx, p, in)
}

// ownTenant names p's tenant.
func ownTenant(p model.Principal) func(Tx) (string, error) {
	return func(Tx) (string, error) { return p.TenantID, nil }
}

// RunUpstream pushes, in the caller's goroutine, the change logs of the tenants whose
// link is due at the clock's time, each until it is empty or fails, and returns how long
// until the soonest retry (an hour when none is planned). Tests drive the pusher with it
// and a FakeClock instead of the loop.
func (e *Links) RunUpstream(ctx context.Context) time.Duration { return e.r.Run(ctx) }
