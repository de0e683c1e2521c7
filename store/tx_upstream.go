package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Kinds of a change, as the one byte that stores them.
var changeKinds = map[string]byte{model.ChangeEvent: 'e', model.ChangeDispatch: 'd', model.ChangeMission: 'm',
	model.ChangeDispatchRequest: 'r', model.ChangeTeamStatus: 't', model.ChangeSiteZone: 'z'}

func changeKind(b byte) string {
	switch b {
	case 'e':
		return model.ChangeEvent
	case 'd':
		return model.ChangeDispatch
	case 'm':
		return model.ChangeMission
	case 'r':
		return model.ChangeDispatchRequest
	case 't':
		return model.ChangeTeamStatus
	case 'z':
		return model.ChangeSiteZone
	}
	return ""
}

// changeValueLen is kind (1) | record id (16) | time (8, Unix ms).
const changeValueLen = 1 + 16 + 8

func (t *tx) Upstream(tenantID string) (*model.UpstreamConfig, error) {
	k, err := idKey(tenantID)
	if err != nil {
		return nil, model.NotFound("upstream")
	}
	var c model.UpstreamConfig
	if ok, err := getJSON(t.btx.Bucket(bucketUpstreams), k, &c); !ok || err != nil {
		if err == nil {
			err = model.NotFound("upstream")
		}
		return nil, err
	}
	return &c, nil
}

func (t *tx) PutUpstream(c *model.UpstreamConfig) error {
	if _, err := t.tenant(c.TenantID); err != nil {
		return err
	}
	k, err := idKey(c.TenantID)
	if err != nil {
		return err
	}
	return putJSON(t.btx.Bucket(bucketUpstreams), k, c)
}

func (t *tx) UpstreamTenants() ([]string, error) {
	var out []string
	err := t.btx.Bucket(bucketUpstreams).ForEach(func(k, _ []byte) error {
		out = append(out, idString(k))
		return nil
	})
	return out, err
}

func (t *tx) AppendChange(tenantID string, c model.LogChange) (int64, error) {
	b, err := t.tbucket(tenantID, tbUpstreamLog)
	if err != nil {
		return 0, err
	}
	kind, ok := changeKinds[c.Kind]
	if !ok {
		return 0, fmt.Errorf("unknown change kind %q", c.Kind)
	}
	id, err := idKey(c.ID)
	if err != nil {
		return 0, fmt.Errorf("change of %s: the record id %q is not a UUID", c.Kind, c.ID)
	}
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	var v [changeValueLen]byte
	v[0] = kind
	copy(v[1:17], id)
	binary.BigEndian.PutUint64(v[17:], uint64(c.At.UnixMilli()))
	b.FillPercent = appendFill
	return int64(seq), b.Put(binary.BigEndian.AppendUint64(nil, seq), v[:])
}

func (t *tx) Changes(tenantID string, after int64, limit int) ([]model.LogChange, error) {
	b, err := t.tbucket(tenantID, tbUpstreamLog)
	if err != nil {
		return nil, err
	}
	var out []model.LogChange
	c := b.Cursor()
	for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, uint64(after+1))); k != nil && len(out) < limit; k, v = c.Next() {
		if len(k) != 8 || len(v) != changeValueLen {
			return nil, fmt.Errorf("upstream log: malformed record %x", k)
		}
		out = append(out, model.LogChange{Seq: int64(binary.BigEndian.Uint64(k)), Kind: changeKind(v[0]),
			ID: idString(v[1:17]), At: model.At(time.UnixMilli(int64(binary.BigEndian.Uint64(v[17:]))))})
	}
	return out, nil
}

func (t *tx) TrimChanges(tenantID string, through int64) error {
	return t.trimLog(tenantID, tbUpstreamLog, through)
}

// trimLog deletes the entries of a log bucket keyed by an 8-byte big-endian sequence (the
// upstream and the downstream logs) up to through.
func (t *tx) trimLog(tenantID string, log []byte, through int64) error {
	b, err := t.tbucket(tenantID, log)
	if err != nil {
		return err
	}
	// Collect, then delete: never delete under a walking cursor.
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && int64(binary.BigEndian.Uint64(k)) <= through; k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) ChangeLogEnd(tenantID string) (int64, error) {
	b, err := t.tbucket(tenantID, tbUpstreamLog)
	if err != nil {
		return 0, err
	}
	return int64(b.Sequence()), nil
}

// downValue is an entry of the downstream log as stored: kind and key are short strings.
type downValue struct {
	Kind string `json:"k"`
	Key  string `json:"r"`
	At   int64  `json:"t"`
}

func (t *tx) AppendDown(tenantID string, c model.DownChange) (int64, error) {
	b, err := t.tbucket(tenantID, tbDownstreamLog)
	if err != nil {
		return 0, err
	}
	if !model.DownKinds[c.Kind] || c.Key == "" {
		return 0, fmt.Errorf("downstream change: bad kind %q or key %q", c.Kind, c.Key)
	}
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	b.FillPercent = appendFill
	return int64(seq), putJSON(b, binary.BigEndian.AppendUint64(nil, seq), downValue{Kind: c.Kind, Key: c.Key, At: c.At.UnixMilli()})
}

func (t *tx) DownChanges(tenantID string, after int64, limit int) ([]model.DownChange, error) {
	b, err := t.tbucket(tenantID, tbDownstreamLog)
	if err != nil {
		return nil, err
	}
	var out []model.DownChange
	c := b.Cursor()
	for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, uint64(max(after, 0)+1))); k != nil && len(out) < limit; k, v = c.Next() {
		var d downValue
		if len(k) != 8 || json.Unmarshal(v, &d) != nil {
			return nil, fmt.Errorf("downstream log: malformed record %x", k)
		}
		out = append(out, model.DownChange{Seq: int64(binary.BigEndian.Uint64(k)), Kind: d.Kind, Key: d.Key,
			At: model.At(time.UnixMilli(d.At))})
	}
	return out, nil
}

func (t *tx) TrimDown(tenantID string, through int64) error {
	return t.trimLog(tenantID, tbDownstreamLog, through)
}

func (t *tx) DownBounds(tenantID string) (first, end int64, err error) {
	b, err := t.tbucket(tenantID, tbDownstreamLog)
	if err != nil {
		return 0, 0, err
	}
	end = int64(b.Sequence())
	if k, _ := b.Cursor().First(); k != nil {
		return int64(binary.BigEndian.Uint64(k)), end, nil
	}
	return end + 1, end, nil
}
