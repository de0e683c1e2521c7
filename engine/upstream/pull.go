package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The site side of the downstream (docs/decisions/0196-downstream-log.md): once a push
// round leaves the log empty, and every PullEvery while the link is up, the site asks
// its central node for the changes after its cursor and applies each answer, records
// and the new cursor, in one transaction. The next pull acknowledges it.

// pullsPerRound bounds the batches one link pulls before the others get a turn.
const pullsPerRound = 20

// pull pulls a tenant's downstream until the site holds the central log's end (or
// pullsPerRound batches were applied).
func (u *Runner) pull(ctx context.Context, l *upLink) error {
	cfg, err := u.load(ctx, l)
	if err != nil || cfg == nil || cfg.DeviceID == "" {
		return err
	}
	if _, err := u.pullFrom(ctx, u.clientFor(l, cfg.CAPEM), l.key, cfg, 0); !errors.Is(err, errNoDownstream) {
		return err
	}
	return nil
}

// pullFrom pulls from cfg's cursor until the site holds the central log's end (or
// pullsPerRound batches were applied); wait (seconds) asks the central node to hold a
// pull at the end until it has news (poller.go). moved says an answer moved the cursor
// (or was a snapshot); an answer behind the end that did not move it ends the round: a
// central node that does not give what it announces is asked again later, not at once.
func (u *Runner) pullFrom(ctx context.Context, client model.UpstreamClient, key string, cfg *model.UpstreamConfig, wait int) (moved bool, err error) {
	for range pullsPerRound {
		if err := u.holdLease(ctx); err != nil {
			return moved, err
		}
		w := wait
		if cfg.Down.Cursor < cfg.Down.End {
			w = 0 // behind the end the central node last announced: nothing to wait for
		}
		body := []byte(`{"device_id":` + strconv.Quote(cfg.DeviceID) + `,"after":` + strconv.FormatInt(cfg.Down.Cursor, 10) +
			`,"snapshot":` + strconv.FormatBool(!cfg.Down.Synced) + `,"wait":` + strconv.Itoa(w) + `}`)
		var ans model.DownPull
		if status, err := u.call(ctx, client, cfg.URL+"/v1/devices/downstream", key, body, &ans); err != nil {
			if status == statusNotFound {
				return moved, errNoDownstream
			}
			return moved, err
		}
		if ans.NodeID == "" || ans.Through < 0 {
			return moved, fmt.Errorf("the upstream's downstream answer has no node_id")
		}
		before := cfg.Down.Cursor
		if cfg, err = u.applyDown(ctx, cfg, &ans); err != nil {
			return moved, err
		}
		advanced := ans.Snapshot || ans.Through > before
		moved = moved || advanced
		if ans.Through >= ans.End || !advanced {
			return moved, nil
		}
	}
	return moved, nil
}

// errNoDownstream: the upstream has no downstream (an older version); nothing comes down.
var errNoDownstream = errors.New("the upstream has no downstream")

// applyDown applies one answer of the central node and its cursor in one transaction.
func (u *Runner) applyDown(ctx context.Context, cfg *model.UpstreamConfig, ans *model.DownPull) (*model.UpstreamConfig, error) {
	var out *model.UpstreamConfig
	var skips []string
	err := u.writeStore.Update(ctx, func(mtx model.Tx) error {
		var tx DownTx = mtx
		skips = skips[:0]
		c, err := u.current(tx, cfg)
		if err != nil {
			return err
		}
		if c.Down.Cursor != cfg.Down.Cursor {
			return errStale // another process applied it
		}
		now := model.At(u.clock.Now())
		for i := range ans.Changes {
			it := &ans.Changes[i]
			version := it.Seq
			if ans.Snapshot {
				version = ans.Through
			}
			skip, err := u.applyDownItem(mtx, c.TenantID, ans.NodeID, version, it)
			if err != nil {
				return fmt.Errorf("applying %s %s of the central node: %w", it.Kind, it.Key, err)
			}
			if skip != "" {
				skips = append(skips, skip)
			}
			if !ans.Snapshot && (c.Down.NewestAt == nil || it.At.After(c.Down.NewestAt.Time)) {
				c.Down.NewestAt = &it.At
			}
		}
		if ans.Snapshot {
			if err := u.removeAbsent(mtx, c.TenantID, ans); err != nil {
				return err
			}
			if err := reportSiteZones(mtx, c.TenantID); err != nil {
				return err
			}
			c.Down.Snapshots++
			c.Down.NewestAt, c.Down.Synced = &now, true
		}
		c.Down.Cursor, c.Down.End, c.Down.Owner, c.Down.LastPullAt = ans.Through, ans.End, ans.NodeID, &now
		if ans.Through >= ans.End {
			c.Down.CaughtUpAt = &now
		}
		if len(skips) > 0 {
			c.Down.Skipped += int64(len(skips))
			c.Down.LastSkip = skips[len(skips)-1]
		}
		out = c
		if err := tx.PutUpstream(c); err != nil {
			return err
		}
		return u.downHealth(tx, c.TenantID, c)
	})
	if err != nil {
		return nil, err
	}
	for _, s := range skips {
		u.log.Warn("downstream: a central record was not applied", "tenant", cfg.TenantID, "reason", s)
	}
	return out, nil
}

// applyDownItem applies one record of the central node (owner) at its version; skip says
// why it was refused (a local record holds its zone code, id or email), "" when it was
// applied or is not newer than the copy.
func (u *Runner) applyDownItem(mtx model.Tx, tenantID, owner string, version int64, it *model.DownItem) (skip string, err error) {
	var tx DownTx = mtx
	gone := len(it.Record) == 0 || string(it.Record) == "null"
	switch it.Kind {
	case model.DownRequest:
		if gone {
			return "", nil
		}
		var r model.DispatchRequest
		if err := json.Unmarshal(it.Record, &r); err != nil {
			return "", err
		}
		if r.Status != model.RequestRequested || !model.ValidID(r.ID) {
			return "", nil
		}
		return "", u.dispatchRequested(mtx, tenantID, &r)
	case model.DownMission:
		if gone {
			return "", nil
		}
		var m model.Mission
		if err := json.Unmarshal(it.Record, &m); err != nil {
			return "", err
		}
		return "", u.mergeMission(mtx, tenantID, &m)
	case model.DownSettings:
		return "", u.applySettings(mtx, tenantID, owner, version, gone, it.Record)
	case model.DownZone:
		old, err := tx.Zone(tenantID, it.Key)
		if err != nil && !model.IsKind(err, model.KindNotFound) {
			return "", err
		}
		if old != nil && old.Origin == nil {
			if gone {
				return "", nil
			}
			return "zone " + it.Key + ": a zone of this site holds the code", nil
		}
		if old != nil && old.OriginVersion >= version {
			return "", nil
		}
		if gone {
			if old == nil {
				return "", nil
			}
			return "", tx.DeleteZone(tenantID, it.Key)
		}
		var z model.Zone
		if err := json.Unmarshal(it.Record, &z); err != nil {
			return "", err
		}
		if old != nil {
			z.Connectivity = old.Connectivity // the site's own reports
		}
		z.Origin, z.OriginVersion = &owner, version
		return "", tx.PutZone(tenantID, &z)
	case model.DownTeam:
		old, err := tx.Team(tenantID, it.Key)
		if err != nil && !model.IsKind(err, model.KindNotFound) {
			return "", err
		}
		if gone {
			return "", u.removeTeam(mtx, tenantID, owner, version, old)
		}
		if old != nil && old.OriginVersion >= version {
			return "", nil
		}
		if old != nil && old.Origin == nil {
			return "team " + it.Key + ": a team of this site holds the id", nil
		}
		var t model.Team
		if err := json.Unmarshal(it.Record, &t); err != nil {
			return "", err
		}
		if old != nil {
			keepOperational(&t, old)
		}
		t.Origin, t.OriginVersion = &owner, version
		return "", tx.PutTeam(tenantID, &t)
	case model.DownUser:
		if gone {
			return "", nil
		}
		var a model.UserAccount
		if err := json.Unmarshal(it.Record, &a); err != nil {
			return "", err
		}
		old, err := tx.UserAccount(tenantID, it.Key)
		if err != nil && !model.IsKind(err, model.KindNotFound) {
			return "", err
		}
		if old != nil && (old.Origin == nil || old.OriginVersion >= version) {
			if old.Origin == nil {
				return "user " + it.Key + ": a user of this site holds the id", nil
			}
			return "", nil
		}
		if other, err := tx.UserAccountByEmail(a.Email); err == nil && other.ID != a.ID {
			return "user " + a.Email + ": a user of this node holds the email", nil
		} else if err != nil && !model.IsKind(err, model.KindNotFound) {
			return "", err
		}
		if old != nil {
			// Sessions at the site end when the owner changed the password, status or role,
			// and a session ended here never comes back.
			bump := int64(0)
			if old.PasswordHash != a.PasswordHash || old.Status != a.Status || old.RBACLevel != a.RBACLevel {
				bump = 1
			}
			a.TokenVersion = max(a.TokenVersion, old.TokenVersion+bump)
		}
		a.TenantID, a.Origin, a.OriginVersion = tenantID, &owner, version
		return "", tx.PutUserAccount(&a)
	}
	return "", nil
}

// keepOperational keeps in t, a new copy of a central team, what the site owns of it:
// the team's status and its members' positions.
func keepOperational(t, old *model.Team) {
	t.Status = old.Status
	for i := range t.Members {
		m := &t.Members[i]
		for _, o := range old.Members {
			if o.ID == m.ID {
				m.Lat, m.Lng, m.LocationUpdatedAt = o.Lat, o.Lng, o.LocationUpdatedAt
			}
		}
	}
}
