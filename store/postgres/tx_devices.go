package postgres

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/jackc/pgx/v5"
)

// Devices, their items and queues, upstream settings and the change log of model.Tx.

func (t *tx) Device(tenantID, id string) (*model.Device, error) {
	tn, did, err := t.ids(tenantID, id, "device")
	if err != nil {
		return nil, err
	}
	return getDoc[model.Device](t, "device", "SELECT doc FROM devices WHERE tenant_id = $1 AND id = $2", tn, did)
}

func (t *tx) DeviceByHardware(tenantID, hardwareID string) (*model.Device, error) {
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return nil, err
	}
	d, err := getDoc[model.Device](t, "device", "SELECT doc FROM devices WHERE tenant_id = $1 AND hardware_id = $2", tn, hardwareID)
	if model.IsKind(err, model.KindNotFound) {
		if terr := t.requireTenant(tn); terr != nil {
			return nil, terr
		}
	}
	return d, err
}

// PutDevice stores d; the hardware id, team and zone are columns that the indexes hold.
func (t *tx) PutDevice(tenantID string, d *model.Device) error {
	tn, id, err := t.ids(tenantID, d.ID, "device")
	if err != nil {
		return err
	}
	if d.HardwareID != nil {
		var owner string
		found, err := t.scan("SELECT id FROM devices WHERE tenant_id = $1 AND hardware_id = $2", []any{tn, *d.HardwareID}, &owner)
		if err != nil {
			return err
		}
		if found && owner != id {
			return model.Errorf(model.KindConflict, "hardware_id %s is registered to another device", model.Quote(*d.HardwareID))
		}
	}
	var team *string
	if d.TeamID != nil {
		c, ok := uid(*d.TeamID)
		if !ok {
			return model.NotFound("team")
		}
		team = &c
	}
	doc, err := jsonOf(d)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO devices (tenant_id, id, hardware_id, team_id, zone_code, doc) SELECT $1, $2, $3, $4, $5, $6`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET hardware_id = excluded.hardware_id, team_id = excluded.team_id,
		zone_code = excluded.zone_code, doc = excluded.doc`, tn, id, d.HardwareID, team, d.ZoneCode, doc)
}

// deviceIDs lists the ids a query finds.
func (t *tx) deviceIDs(sql string, args ...any) ([]string, error) {
	var out []string
	err := t.each(sql, args, func(r pgx.Rows) (bool, error) {
		var id string
		err := r.Scan(&id)
		out = append(out, id)
		return true, err
	})
	return out, err
}

func (t *tx) DevicesOfTeam(tenantID, teamID string) ([]string, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	team, ok := uid(teamID)
	if !ok {
		return nil, nil
	}
	return t.deviceIDs("SELECT id FROM devices WHERE tenant_id = $1 AND team_id = $2 ORDER BY id", tn, team)
}

func (t *tx) DevicesOfZone(tenantID, zoneCode string) ([]string, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	return t.deviceIDs("SELECT id FROM devices WHERE tenant_id = $1 AND zone_code = $2 ORDER BY id", tn, zoneCode)
}

func (t *tx) DeviceItem(tenantID, deviceID string, seq int64) (*model.DeviceItem, error) {
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return nil, err
	}
	dev, ok := uid(deviceID)
	if !ok {
		return nil, t.requireTenant(tn)
	}
	it, err := getDoc[model.DeviceItem](t, "device item", "SELECT doc FROM device_items WHERE tenant_id = $1 AND device_id = $2 AND seq = $3", tn, dev, seq)
	if model.IsKind(err, model.KindNotFound) {
		return nil, t.requireTenant(tn)
	}
	return it, err
}

func (t *tx) PutDeviceItem(tenantID, deviceID string, it *model.DeviceItem) error {
	tn, dev, err := t.ids(tenantID, deviceID, "device")
	if err != nil {
		return err
	}
	doc, err := jsonOf(it)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO device_items (tenant_id, device_id, seq, doc) SELECT $1, $2, $3, $4`+ifTenant+`
		ON CONFLICT (tenant_id, device_id, seq) DO UPDATE SET doc = excluded.doc`, tn, dev, it.Seq, doc)
}

func (t *tx) WalkDeviceItems(tenantID, deviceID string, after int64, fn func(seq int64) bool) error {
	tn, dev, err := t.ids(tenantID, deviceID, "device")
	if err != nil {
		return err
	}
	if err := t.requireTenant(tn); err != nil {
		return err
	}
	// Read a bounded batch at a time: fn usually stops early.
	const step = 1000
	for {
		var seqs []int64
		err := t.each(`SELECT seq FROM device_items WHERE tenant_id = $1 AND device_id = $2 AND seq > $3
			ORDER BY seq LIMIT $4`, []any{tn, dev, after, step}, func(r pgx.Rows) (bool, error) {
			var s int64
			err := r.Scan(&s)
			seqs = append(seqs, s)
			return true, err
		})
		if err != nil {
			return err
		}
		for _, s := range seqs {
			if !fn(s) {
				return nil
			}
			after = s
		}
		if len(seqs) < step {
			return nil
		}
	}
}

func (t *tx) PutQueueItem(tenantID, deviceID string, q *model.QueueItem) error {
	tn, dev, err := t.ids(tenantID, deviceID, "device")
	if err != nil {
		return err
	}
	doc, err := jsonOf(q)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO device_queue (tenant_id, device_id, seq, doc) SELECT $1, $2, $3, $4`+ifTenant+`
		ON CONFLICT (tenant_id, device_id, seq) DO UPDATE SET doc = excluded.doc`, tn, dev, q.QueueSequence, doc)
}

func (t *tx) QueueItems(tenantID, deviceID string, after int64, limit int) ([]model.QueueItem, error) {
	tn, dev, err := t.ids(tenantID, deviceID, "device")
	if err != nil {
		return nil, err
	}
	if err := t.requireTenant(tn); err != nil {
		return nil, err
	}
	return docs[model.QueueItem](t, `SELECT doc FROM device_queue WHERE tenant_id = $1 AND device_id = $2 AND seq > $3
		ORDER BY seq LIMIT $4`, tn, dev, after, max(limit, 0))
}

func (t *tx) DeleteQueueItems(tenantID, deviceID string, through int64) ([]model.QueueItem, error) {
	tn, dev, err := t.ids(tenantID, deviceID, "device")
	if err != nil {
		return nil, err
	}
	if err := t.requireTenant(tn); err != nil {
		return nil, err
	}
	var out []model.QueueItem
	err = t.each(`WITH gone AS (DELETE FROM device_queue WHERE tenant_id = $1 AND device_id = $2 AND seq <= $3
		RETURNING seq, doc) SELECT doc FROM gone ORDER BY seq`, []any{tn, dev, through}, func(r pgx.Rows) (bool, error) {
		var raw []byte
		if err := r.Scan(&raw); err != nil {
			return false, err
		}
		var q model.QueueItem
		if err := json.Unmarshal(raw, &q); err != nil {
			return false, fmt.Errorf("postgres: decoding a queue item: %w", err)
		}
		out = append(out, q)
		return true, nil
	})
	return out, err
}

// Upstream reads a tenant's settings once per transaction: a transaction does not see
// what commits meanwhile, and PutUpstream drops what was read.
func (t *tx) Upstream(tenantID string) (*model.UpstreamConfig, error) {
	tn, ok := uid(tenantID)
	if !ok {
		return nil, model.NotFound("upstream")
	}
	if err := t.lockTenant(tn); err != nil {
		return nil, err
	}
	raw, ok := t.upstreams[tn]
	if !ok {
		if _, err := t.scan("SELECT doc FROM upstreams WHERE tenant_id = $1", []any{tn}, &raw); err != nil {
			return nil, err
		}
		if t.upstreams == nil {
			t.upstreams = map[string][]byte{}
		}
		t.upstreams[tn] = raw
	}
	if raw == nil {
		return nil, model.NotFound("upstream")
	}
	var c model.UpstreamConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("postgres: decoding an upstream: %w", err)
	}
	return &c, nil
}

func (t *tx) PutUpstream(c *model.UpstreamConfig) error {
	tn, err := t.canonTenant(c.TenantID)
	if err != nil {
		return err
	}
	doc, err := jsonOf(c)
	if err != nil {
		return err
	}
	delete(t.upstreams, tn)
	return t.put(`INSERT INTO upstreams (tenant_id, doc) SELECT $1, $2`+ifTenant+`
		ON CONFLICT (tenant_id) DO UPDATE SET doc = excluded.doc`, tn, doc)
}

// UpstreamTenants is a read across tenants, of the small upstreams table.
func (t *tx) UpstreamTenants() ([]string, error) {
	return t.deviceIDs("SELECT tenant_id FROM upstreams ORDER BY tenant_id")
}

// AppendChange takes the next sequence number of the tenant's log from upstream_log_end,
// which keeps the last one given even when the log is trimmed empty.
func (t *tx) AppendChange(tenantID string, c model.LogChange) (int64, error) {
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return 0, err
	}
	if !slices.Contains(model.ChangeKinds, c.Kind) {
		return 0, fmt.Errorf("unknown change kind %q", c.Kind)
	}
	id, ok := uid(c.ID)
	if !ok {
		return 0, fmt.Errorf("change of %s: the record id %q is not a UUID", c.Kind, c.ID)
	}
	var seq int64
	found, err := t.scan(t.ofTenant(tn, `INSERT INTO upstream_log_end (tenant_id, last_seq) SELECT $1, 1`+ifTenant+`
		ON CONFLICT (tenant_id) DO UPDATE SET last_seq = upstream_log_end.last_seq + 1 RETURNING last_seq`), []any{tn}, &seq)
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, model.NotFound("tenant")
	}
	_, err = t.exec("INSERT INTO upstream_log (tenant_id, seq, kind, record_id, at) VALUES ($1, $2, $3, $4, $5)",
		tn, seq, c.Kind, id, time.UnixMilli(c.At.UnixMilli()))
	return seq, err
}

func (t *tx) Changes(tenantID string, after int64, limit int) ([]model.LogChange, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	var out []model.LogChange
	err = t.each(`SELECT seq, kind, record_id, at FROM upstream_log WHERE tenant_id = $1 AND seq > $2
		ORDER BY seq LIMIT $3`, []any{tn, after, max(limit, 0)}, func(r pgx.Rows) (bool, error) {
		var c model.LogChange
		var at time.Time
		err := r.Scan(&c.Seq, &c.Kind, &c.ID, &at)
		c.At = model.At(at)
		out = append(out, c)
		return true, err
	})
	return out, err
}

func (t *tx) TrimChanges(tenantID string, through int64) error {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return err
	}
	_, err = t.exec("DELETE FROM upstream_log WHERE tenant_id = $1 AND seq <= $2", tn, through)
	return err
}

func (t *tx) ChangeLogEnd(tenantID string) (int64, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return 0, err
	}
	var seq int64
	_, err = t.scan("SELECT last_seq FROM upstream_log_end WHERE tenant_id = $1", []any{tn}, &seq)
	return seq, err
}

func (t *tx) Devices(tenantID string, p model.Page) ([]model.Device, string, error) {
	return newest[model.Device](t, "devices", tenantID, p)
}

func (t *tx) TakeQueueItem(tenantID, deviceID, kind, missionID string) (*model.QueueItem, error) {
	tn, dev, err := t.ids(tenantID, deviceID, "device")
	if err != nil {
		return nil, err
	}
	if err := t.requireTenant(tn); err != nil {
		return nil, err
	}
	got, err := docs[model.QueueItem](t, `DELETE FROM device_queue WHERE (tenant_id, device_id, seq) IN (
		SELECT tenant_id, device_id, seq FROM device_queue WHERE tenant_id = $1 AND device_id = $2
		AND doc->>'kind' = $3 AND doc->>'mission_id' = $4 ORDER BY seq LIMIT 1) RETURNING doc`, tn, dev, kind, missionID)
	if err != nil || len(got) == 0 {
		return nil, err
	}
	return &got[0], nil
}
