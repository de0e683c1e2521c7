package upstream

import (
	"context"
	"encoding/json"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// The central side of the downstream (docs/decisions/0196-downstream-log.md): a use case
// that writes a zone, a team or a user the node owns says so with writes.Changed (kind
// model.DownZone, DownTeam or DownUser); LogDown, a pre-commit hook, appends each to the
// tenant's downstream log, and POST /v1/devices/downstream (Pull) hands a site node the
// changes routed to it after its cursor, each record as it stands now, or a snapshot.

// DownTx is what the downstream reads and writes of a transaction.
type DownTx interface {
	Tx
	model.DownstreamTx
	Device(tenantID, id string) (*model.Device, error)
	Tenant(id string) (*model.Tenant, error)
	PutTenant(t *model.Tenant) error
	Zone(tenantID, code string) (*model.Zone, error)
	Zones(tenantID string) ([]model.Zone, error)
	PutZone(tenantID string, z *model.Zone) error
	DeleteZone(tenantID, code string) error
	Team(tenantID, id string) (*model.Team, error)
	Teams(tenantID string) ([]model.Team, error)
	PutTeam(tenantID string, t *model.Team) error
	UserAccount(tenantID, id string) (*model.UserAccount, error)
	UserAccountByEmail(email string) (*model.UserAccount, error)
	PutUserAccount(u *model.UserAccount) error
	Users(tenantID string, p model.Page) ([]model.User, string, error)
}

var _ DownTx = model.Tx(nil)

// LogDown is the pre-commit hook of the downstream log: it appends the changes of zones,
// teams and users recorded in tx to their tenants' logs, and trims each log to the
// newest DownKeep entries (a site whose cursor falls below gets a snapshot).
func (u *Runner) LogDown(tx model.Tx) error {
	now := model.At(u.clock.Now())
	for _, c := range writes.Changes(tx) {
		if !model.DownKinds[c.Kind] {
			continue
		}
		seq, err := tx.AppendDown(c.TenantID, model.DownChange{Kind: c.Kind, Key: c.ID, At: now})
		if err != nil {
			return err
		}
		if seq > int64(u.opt.DownKeep) {
			if err := tx.TrimDown(c.TenantID, seq-int64(u.opt.DownKeep)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Pull answers a site node's pull (POST /v1/devices/downstream): the changes of its
// routes after in.After, at most BatchSize, or a snapshot of every record routed to it
// when it asks for one (a new site) or its cursor is older than the log keeps (or past
// its end: a central node restored from a backup). The caller needs
// devices:manage and the device must be a node (as for the upstream_* items).
func (u *Runner) Pull(ctx context.Context, p model.Principal, in model.DownPullInput) (*model.DownPull, error) {
	if err := p.Require(model.PermDevicesManage); err != nil {
		return nil, err
	}
	nodeID, err := u.secret(ctx, model.SecretNodeID)
	if err != nil {
		return nil, err
	}
	out := &model.DownPull{NodeID: string(nodeID), Changes: []model.DownItem{}}
	err = u.store.View(ctx, func(mtx model.Tx) error {
		var tx DownTx = mtx
		d, err := tx.Device(p.TenantID, in.DeviceID)
		if err != nil {
			return err
		}
		if err := MayApply(p, d, model.ItemUpstreamEvent); err != nil {
			return err
		}
		first, end, err := tx.DownBounds(p.TenantID)
		if err != nil {
			return err
		}
		out.End = end
		if in.Snapshot || in.After < 0 || in.After < first-1 || in.After > end {
			out.Snapshot, out.Through = true, end
			return snapshot(tx, p.TenantID, d.ID, out)
		}
		changes, err := tx.DownChanges(p.TenantID, in.After, u.opt.BatchSize)
		if err != nil {
			return err
		}
		out.Through = in.After
		for _, c := range changes {
			rec, err := downRecord(tx, p.TenantID, d.ID, c.Kind, c.Key)
			if err != nil {
				return err
			}
			out.Changes = append(out.Changes, model.DownItem{Seq: c.Seq, Kind: c.Kind, Key: c.Key, At: c.At, Record: rec})
			out.Through = c.Seq
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// routed reports whether a record with siteID goes to the site whose device is deviceID:
// every site when it names none.
func routed(siteID *string, deviceID string) bool { return siteID == nil || *siteID == deviceID }

// downRecord renders a record of the log as it stands now, null when it is gone, is a
// copy of another node's, or is not routed to the site.
func downRecord(tx DownTx, tenantID, deviceID, kind, key string) (json.RawMessage, error) {
	var v any
	switch kind {
	case model.DownZone:
		z, err := tx.Zone(tenantID, key)
		if err == nil && z.Origin == nil && routed(z.SiteID, deviceID) {
			v = z
		} else if !model.IsKind(err, model.KindNotFound) && err != nil {
			return nil, err
		}
	case model.DownTeam:
		t, err := tx.Team(tenantID, key)
		if err == nil && t.Origin == nil && routed(t.SiteID, deviceID) {
			v = t
		} else if !model.IsKind(err, model.KindNotFound) && err != nil {
			return nil, err
		}
	case model.DownRequest:
		r, err := tx.DispatchRequest(tenantID, key)
		if err == nil && r.SiteID == deviceID {
			v = r
		} else if !model.IsKind(err, model.KindNotFound) && err != nil {
			return nil, err
		}
	case model.DownMission:
		m, err := tx.Mission(tenantID, key)
		if err != nil && !model.IsKind(err, model.KindNotFound) {
			return nil, err
		}
		if m != nil && m.Origin != nil {
			d, err := tx.Device(tenantID, deviceID)
			if err != nil {
				return nil, err
			}
			if d.HardwareID != nil && *d.HardwareID == *m.Origin {
				v = m // the site that owns it
			}
		}
	case model.DownSettings:
		t, err := tx.Tenant(tenantID)
		if err != nil {
			return nil, err
		}
		if t.SettingsOrigin == nil {
			v = t.Settings()
		}
	case model.DownUser:
		a, err := tx.UserAccount(tenantID, key)
		if err == nil && a.Origin == nil {
			v = a
		} else if !model.IsKind(err, model.KindNotFound) && err != nil {
			return nil, err
		}
	}
	if v == nil {
		return json.RawMessage("null"), nil
	}
	return json.Marshal(v)
}

// snapshot puts in out every record routed to the site: the tenant's settings (when
// they are its own), zones, teams, then users.
func snapshot(tx DownTx, tenantID, deviceID string, out *model.DownPull) error {
	add := func(kind, key string, v any) error {
		raw, err := json.Marshal(v)
		if err == nil {
			out.Changes = append(out.Changes, model.DownItem{Seq: out.Through, Kind: kind, Key: key, Record: raw})
		}
		return err
	}
	t, err := tx.Tenant(tenantID)
	if err != nil {
		return err
	}
	if t.SettingsOrigin == nil {
		if err := add(model.DownSettings, tenantID, t.Settings()); err != nil {
			return err
		}
	}
	zs, err := tx.Zones(tenantID)
	if err != nil {
		return err
	}
	for i := range zs {
		if z := &zs[i]; z.Origin == nil && routed(z.SiteID, deviceID) {
			if err := add(model.DownZone, z.Code, z); err != nil {
				return err
			}
		}
	}
	ts, err := tx.Teams(tenantID)
	if err != nil {
		return err
	}
	for i := range ts {
		if t := &ts[i]; t.Origin == nil && routed(t.SiteID, deviceID) {
			if err := add(model.DownTeam, t.ID, t); err != nil {
				return err
			}
		}
	}
	page := model.Page{Limit: 1000}
	for {
		us, next, err := tx.Users(tenantID, page)
		if err != nil {
			return err
		}
		for _, usr := range us {
			if usr.Origin != nil {
				continue
			}
			a, err := tx.UserAccount(tenantID, usr.ID)
			if err != nil {
				return err
			}
			if err := add(model.DownUser, a.ID, a); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		page.Cursor = next
	}
}
