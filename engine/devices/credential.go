package devices

import (
	"context"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// DeviceCredentialLifetime is how long a device credential is valid: long enough for a
// field app to work offline for weeks past a session's 8 hours, short enough that a lost
// device nobody revoked stops working by itself (docs/decisions/0126-device-credentials.md).
const DeviceCredentialLifetime = 30 * 24 * time.Hour

// IssueDeviceCredential issues a credential for a device p may sync (POST
// /v1/devices/:id/credential). Only a signed-in user may: the credential acts for that
// user, narrowed to the device. A new credential replaces the device's previous one,
// which is refused from then on. The server signs the returned grant.
func (e *Credentials) IssueDeviceCredential(ctx context.Context, p model.Principal, deviceID string) (*model.DeviceGrant, error) {
	if p.UserID == "" || p.DeviceID != "" {
		return nil, model.Errorf(model.KindForbidden, "a device credential is issued to a signed-in user only")
	}
	return writes.Do(ctx, e.frame, p.TenantID, nil, func(tx model.Tx) (*model.DeviceGrant, error) {
		d, err := e.visible(tx, p, deviceID, false)
		if err != nil {
			return nil, err
		}
		u, err := tx.UserAccount(p.TenantID, p.UserID)
		if err != nil {
			return nil, err
		}
		now := e.clock.Now()
		c := &model.DeviceCredential{Version: 1, IssuedBy: p.UserID, IssuedAt: model.At(now),
			ExpiresAt: model.At(now.Add(DeviceCredentialLifetime))}
		if d.Credential != nil {
			c.Version = d.Credential.Version + 1
		}
		d.Credential = c
		if err := tx.PutDevice(p.TenantID, d); err != nil {
			return nil, err
		}
		return &model.DeviceGrant{TenantID: p.TenantID, UserID: p.UserID, UserVersion: u.TokenVersion,
			DeviceID: d.ID, Version: c.Version, ExpiresAt: c.ExpiresAt, Device: d}, nil
	})
}

// RevokeDeviceCredential revokes a device's credential (DELETE
// /v1/devices/:id/credential, devices:manage): the next request that presents it is
// refused. Revoking a device with no live credential changes nothing.
func (e *Credentials) RevokeDeviceCredential(ctx context.Context, p model.Principal, deviceID string) (*model.Device, error) {
	if err := p.Require(model.PermDevicesManage); err != nil {
		return nil, err
	}
	return writes.Do(ctx, e.frame, p.TenantID, nil, func(tx model.Tx) (*model.Device, error) {
		return e.revokeDeviceCredential(tx, p.TenantID, deviceID, p.ActorID())
	})
}

// AdminRevokeDeviceCredential is RevokeDeviceCredential for the tenant named by slug
// (`fieldrelay device revoke`).
func (e *Credentials) AdminRevokeDeviceCredential(ctx context.Context, slug, deviceID string) (*model.Device, error) {
	return writes.Do(ctx, e.frame, "", nil, func(tx model.Tx) (*model.Device, error) {
		t, err := tx.TenantBySlug(slug)
		if err != nil {
			return nil, err
		}
		return e.revokeDeviceCredential(tx, t.ID, deviceID, "admin")
	})
}

// revokeDeviceCredential is the revocation within tx. The version moves on as well, so no
// token issued before can ever be valid again.
func (e *Credentials) revokeDeviceCredential(tx model.Tx, tenantID, deviceID, by string) (*model.Device, error) {
	if !model.ValidID(deviceID) {
		return nil, model.NotFound("device")
	}
	d, err := tx.Device(tenantID, deviceID)
	if err != nil {
		return nil, err
	}
	if d.Credential == nil || d.Credential.RevokedAt != nil {
		return d, nil
	}
	d.Credential.Version++
	d.Credential.RevokedAt = model.TimePtr(e.clock.Now())
	d.Credential.RevokedBy = by
	return d, tx.PutDevice(tenantID, d)
}

// AuthenticateDevice resolves the principal of a device credential's token: its user
// must be valid as for a session token (AuthenticateUser), and the device must hold a
// credential of that version, neither revoked nor expired. The device is read at every
// request, so a revocation is refused at once, on every process of a shared store.
func (e *Credentials) AuthenticateDevice(ctx context.Context, g model.DeviceGrant) (model.Principal, error) {
	p, err := e.authUser(ctx, g.TenantID, g.UserID, g.UserVersion)
	if err != nil {
		return model.Principal{}, err
	}
	revoked := model.Errorf(model.KindUnauthorized, "this device's credential is revoked or replaced; sign in again")
	err = e.store.View(ctx, func(tx model.Tx) error {
		d, err := tx.Device(g.TenantID, g.DeviceID)
		if model.IsKind(err, model.KindNotFound) {
			return revoked
		}
		if err != nil {
			return err
		}
		if !d.Credential.Valid(g.Version, model.At(e.clock.Now())) {
			return revoked
		}
		return nil
	})
	if err != nil {
		return model.Principal{}, err
	}
	p.DeviceID = g.DeviceID
	return p, nil
}

// Devices lists a page of the tenant's devices, newest first, with their sync state and
// the state of their credentials (GET /v1/devices, devices:manage); the string is the
// next cursor.
func (e *Credentials) Devices(ctx context.Context, p model.Principal, pg model.Page) ([]model.Device, string, error) {
	if err := p.Require(model.PermDevicesManage); err != nil {
		return nil, "", err
	}
	return e.devicesOf(ctx, p.TenantID, pg)
}

// AdminDevices is Devices for the tenant named by slug (`fieldrelay device list`).
func (e *Credentials) AdminDevices(ctx context.Context, slug string, pg model.Page) ([]model.Device, string, error) {
	t, err := e.tenantBySlug(ctx, slug)
	if err != nil {
		return nil, "", err
	}
	return e.devicesOf(ctx, t.ID, pg)
}

func (e *Credentials) devicesOf(ctx context.Context, tenantID string, pg model.Page) (out []model.Device, next string, err error) {
	err = e.store.View(ctx, func(tx model.Tx) error {
		out, next, err = tx.Devices(tenantID, pg)
		return err
	})
	return out, next, err
}
