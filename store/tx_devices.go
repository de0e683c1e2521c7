package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// seqKey is a device's id followed by a sequence number (8 bytes, big-endian), so that a
// device's items and queue sort by sequence.
func seqKey(deviceID string, seq int64) ([]byte, error) {
	k, err := idKey(deviceID)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(bytes.Clone(k), uint64(seq)), nil
}

// zoneDeviceKey is zone code | 0 | device id.
func zoneDeviceKey(zoneCode, deviceID string) ([]byte, error) {
	k, err := idKey(deviceID)
	if err != nil {
		return nil, err
	}
	return append(append([]byte(zoneCode), 0), k...), nil
}

func (t *tx) Device(tenantID, id string) (*model.Device, error) {
	b, err := t.tbucket(tenantID, tbDevices)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("device")
	}
	var d model.Device
	if ok, err := getJSON(b, k, &d); !ok || err != nil {
		if err == nil {
			err = model.NotFound("device")
		}
		return nil, err
	}
	return &d, nil
}

func (t *tx) DeviceByHardware(tenantID, hardwareID string) (*model.Device, error) {
	b, err := t.tbucket(tenantID, tbDevicesByHardware)
	if err != nil {
		return nil, err
	}
	id := b.Get([]byte(hardwareID))
	if hardwareID == "" || id == nil {
		return nil, model.NotFound("device")
	}
	return t.Device(tenantID, idString(id))
}

// PutDevice stores d; its indexes by hardware id, team and zone follow the record.
func (t *tx) PutDevice(tenantID string, d *model.Device) error {
	tb, err := t.tenant(tenantID)
	if err != nil {
		return err
	}
	k, err := idKey(d.ID)
	if err != nil {
		return err
	}
	b := tb.Bucket(tbDevices)
	var old model.Device
	found, err := getJSON(b, k, &old)
	if err != nil {
		return err
	}
	if !found || !sameString(old.HardwareID, d.HardwareID) {
		hw := tb.Bucket(tbDevicesByHardware)
		if d.HardwareID != nil {
			if owner := hw.Get([]byte(*d.HardwareID)); owner != nil && !bytes.Equal(owner, k) {
				return model.Errorf(model.KindConflict, "hardware_id %s is registered to another device", model.Quote(*d.HardwareID))
			}
			if err := hw.Put([]byte(*d.HardwareID), k); err != nil {
				return err
			}
		}
		if found && old.HardwareID != nil {
			if err := hw.Delete([]byte(*old.HardwareID)); err != nil {
				return err
			}
		}
	}
	if !found || !sameString(old.TeamID, d.TeamID) {
		if err := reindex(tb.Bucket(tbDevicesByTeam), d.ID, found, old.TeamID, d.TeamID, func(team, dev string) ([]byte, error) {
			return pair(team, dev)
		}); err != nil {
			return err
		}
	}
	if !found || !sameString(old.ZoneCode, d.ZoneCode) {
		if err := reindex(tb.Bucket(tbDevicesByZone), d.ID, found, old.ZoneCode, d.ZoneCode, zoneDeviceKey); err != nil {
			return err
		}
	}
	return putJSON(b, k, d)
}

// reindex moves a device's entry in an index from the old value to the new one.
func reindex(b *bolt.Bucket, deviceID string, found bool, old, cur *string, key func(v, deviceID string) ([]byte, error)) error {
	if found && old != nil {
		k, err := key(*old, deviceID)
		if err != nil {
			return err
		}
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	if cur != nil {
		k, err := key(*cur, deviceID)
		if err != nil {
			return err
		}
		return b.Put(k, nil)
	}
	return nil
}

func sameString(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// PutTeamPositions is PutTeam without the directory version bump.
func (t *tx) PutTeamPositions(tenantID string, tm *model.Team) error {
	b, err := t.tbucket(tenantID, tbTeams)
	if err != nil {
		return err
	}
	k, err := idKey(tm.ID)
	if err != nil {
		return err
	}
	return putJSON(b, k, tm)
}

func (t *tx) DevicesOfTeam(tenantID, teamID string) ([]string, error) {
	b, err := t.tbucket(tenantID, tbDevicesByTeam)
	if err != nil {
		return nil, err
	}
	prefix, err := idKey(teamID)
	if err != nil {
		return nil, nil
	}
	return devicesUnder(b, prefix), nil
}

func (t *tx) DevicesOfZone(tenantID, zoneCode string) ([]string, error) {
	b, err := t.tbucket(tenantID, tbDevicesByZone)
	if err != nil {
		return nil, err
	}
	return devicesUnder(b, append([]byte(zoneCode), 0)), nil
}

// devicesUnder lists the device ids of an index's keys that start with prefix.
func devicesUnder(b *bolt.Bucket, prefix []byte) []string {
	var out []string
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+16 {
			out = append(out, idString(k[len(prefix):]))
		}
	}
	return out
}

func (t *tx) DeviceItem(tenantID, deviceID string, seq int64) (*model.DeviceItem, error) {
	b, err := t.tbucket(tenantID, tbDeviceSeq)
	if err != nil {
		return nil, err
	}
	k, err := seqKey(deviceID, seq)
	if err != nil {
		return nil, nil
	}
	var it model.DeviceItem
	if ok, err := getJSON(b, k, &it); !ok || err != nil {
		return nil, err
	}
	return &it, nil
}

func (t *tx) PutDeviceItem(tenantID, deviceID string, it *model.DeviceItem) error {
	b, err := t.tbucket(tenantID, tbDeviceSeq)
	if err != nil {
		return err
	}
	k, err := seqKey(deviceID, it.Seq)
	if err != nil {
		return err
	}
	b.FillPercent = appendFill
	return putJSON(b, k, it)
}

func (t *tx) WalkDeviceItems(tenantID, deviceID string, after int64, fn func(seq int64) bool) error {
	b, err := t.tbucket(tenantID, tbDeviceSeq)
	if err != nil {
		return err
	}
	from, err := seqKey(deviceID, after+1)
	if err != nil {
		return err
	}
	prefix := from[:16]
	c := b.Cursor()
	for k, _ := c.Seek(from); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if !fn(int64(binary.BigEndian.Uint64(k[16:]))) {
			return nil
		}
	}
	return nil
}

func (t *tx) PutQueueItem(tenantID, deviceID string, q *model.QueueItem) error {
	b, err := t.tbucket(tenantID, tbDeviceQueue)
	if err != nil {
		return err
	}
	k, err := seqKey(deviceID, q.QueueSequence)
	if err != nil {
		return err
	}
	b.FillPercent = appendFill
	return putJSON(b, k, q)
}

func (t *tx) QueueItems(tenantID, deviceID string, after int64, limit int) ([]model.QueueItem, error) {
	b, err := t.tbucket(tenantID, tbDeviceQueue)
	if err != nil {
		return nil, err
	}
	from, err := seqKey(deviceID, after+1)
	if err != nil {
		return nil, err
	}
	prefix := from[:16]
	out := []model.QueueItem{}
	c := b.Cursor()
	for k, v := c.Seek(from); k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, v = c.Next() {
		var q model.QueueItem
		if err := json.Unmarshal(v, &q); err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

func (t *tx) DeleteQueueItems(tenantID, deviceID string, through int64) ([]model.QueueItem, error) {
	b, err := t.tbucket(tenantID, tbDeviceQueue)
	if err != nil {
		return nil, err
	}
	from, err := seqKey(deviceID, 0)
	if err != nil {
		return nil, err
	}
	prefix := from[:16]
	var out []model.QueueItem
	var keys [][]byte
	c := b.Cursor()
	for k, v := c.Seek(from); k != nil && bytes.HasPrefix(k, prefix) && int64(binary.BigEndian.Uint64(k[16:])) <= through; k, v = c.Next() {
		var q model.QueueItem
		if err := json.Unmarshal(v, &q); err != nil {
			return nil, err
		}
		out = append(out, q)
		keys = append(keys, bytes.Clone(k))
	}
	// Never delete while a cursor walks: collect, then delete.
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (t *tx) Devices(tenantID string, p model.Page) ([]model.Device, string, error) {
	b, err := t.tbucket(tenantID, tbDevices)
	if err != nil {
		return nil, "", err
	}
	out := []model.Device{}
	next, err := listNewestFirst(b, p, 16, func(_, v []byte) error {
		var d model.Device
		if err := json.Unmarshal(v, &d); err != nil {
			return err
		}
		out = append(out, d)
		return nil
	})
	return out, next, err
}

func (t *tx) TakeQueueItem(tenantID, deviceID, kind, missionID string) (*model.QueueItem, error) {
	b, err := t.tbucket(tenantID, tbDeviceQueue)
	if err != nil {
		return nil, err
	}
	from, err := seqKey(deviceID, 0)
	if err != nil {
		return nil, err
	}
	prefix := from[:16]
	needle := []byte(missionID)
	c := b.Cursor()
	for k, v := c.Seek(from); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		// Only an item that names the mission is decoded: a long queue is walked cheaply.
		if !bytes.Contains(v, needle) {
			continue
		}
		var q model.QueueItem
		if err := json.Unmarshal(v, &q); err != nil {
			return nil, err
		}
		if q.Kind == kind && q.MissionID == missionID {
			return &q, b.Delete(bytes.Clone(k))
		}
	}
	return nil, nil
}
