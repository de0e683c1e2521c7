package engine

import (
	"context"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/upstream"
)

// The use cases of upstream sync, as the server calls them; the capability itself is
// engine/upstream.

// Upstream link states of GET /v1/tenant/upstream/status.
const (
	UpstreamUnconfigured = upstream.StateUnconfigured
	UpstreamPaused       = upstream.StatePaused
	UpstreamIdle         = upstream.StateIdle
	UpstreamPushing      = upstream.StatePushing
	UpstreamDown         = upstream.StateDown
)

// PlatformNode is the platform of a device that is another fieldrelay node: the only
// devices whose upstream_* items are accepted. Its hardware_id is the node's id.
const PlatformNode = upstream.PlatformNode

// CheckUpstreamURL validates an upstream's base URL (upstream.CheckURL).
func CheckUpstreamURL(raw string) (string, error) { return upstream.CheckURL(raw) }

// SetUpstream sets the upstream of p's tenant (PUT /v1/tenant/upstream). It
// needs tenant:admin.
func (e *Engine) SetUpstream(ctx context.Context, p model.Principal, in model.UpstreamInput, w *model.Write) (*model.UpstreamSettings, error) {
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.UpstreamSettings, error) {
		if err := p.Require(model.PermTenantAdmin); err != nil {
			return nil, err
		}
		return e.up.SetIn(tx, ownTenant(p), in)
	})
}

// AdminSetUpstream is SetUpstream for the tenant of a slug (the admin command).
func (e *Engine) AdminSetUpstream(ctx context.Context, slug string, in model.UpstreamInput) (*model.UpstreamSettings, error) {
	return write(ctx, e, "", nil, func(tx model.Tx) (*model.UpstreamSettings, error) {
		return e.up.SetIn(tx, upstream.BySlug(slug), in)
	})
}

// AdminPauseUpstream pauses or resumes the push of the tenant of a slug (the admin
// command); the change log keeps being written while paused.
func (e *Engine) AdminPauseUpstream(ctx context.Context, slug string, paused bool) (*model.UpstreamSettings, error) {
	return write(ctx, e, "", nil, func(tx model.Tx) (*model.UpstreamSettings, error) { return e.up.PauseIn(tx, slug, paused) })
}

// Upstream returns the upstream settings of p's tenant (GET /v1/tenant/upstream);
// KindNotFound when it has none. It needs tenant:admin.
func (e *Engine) Upstream(ctx context.Context, p model.Principal) (*model.UpstreamSettings, error) {
	if err := p.Require(model.PermTenantAdmin); err != nil {
		return nil, err
	}
	return e.up.Settings(ctx, ownTenant(p))
}

// AdminUpstream is Upstream for the tenant of a slug (the admin command).
func (e *Engine) AdminUpstream(ctx context.Context, slug string) (*model.UpstreamSettings, error) {
	return e.up.Settings(ctx, upstream.BySlug(slug))
}

// UpstreamStatus returns where the upstream sync of p's tenant stands (GET
// /v1/tenant/upstream/status). It needs tenant:admin.
func (e *Engine) UpstreamStatus(ctx context.Context, p model.Principal) (*model.UpstreamStatus, error) {
	if err := p.Require(model.PermTenantAdmin); err != nil {
		return nil, err
	}
	return e.up.Status(ctx, ownTenant(p))
}

// UpstreamStatusOf is UpstreamStatus for the tenant of a slug (the admin command).
func (e *Engine) UpstreamStatusOf(ctx context.Context, slug string) (*model.UpstreamStatus, error) {
	return e.up.Status(ctx, upstream.BySlug(slug))
}

// ownTenant names p's tenant.
func ownTenant(p model.Principal) func(upstream.Tx) (string, error) {
	return func(upstream.Tx) (string, error) { return p.TenantID, nil }
}

// RunUpstream pushes, in the caller's goroutine, the change logs of the tenants whose
// link is due at the clock's time, each until it is empty or fails, and returns how long
// until the soonest retry (an hour when none is planned). Tests drive the pusher with it
// and a FakeClock instead of the loop.
func (e *Engine) RunUpstream(ctx context.Context) time.Duration { return e.up.Run(ctx) }
