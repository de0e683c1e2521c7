package store

import (
	"fmt"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// recordBuckets are the tenant buckets of the kinds a change log holds, keyed by id.
var recordBuckets = map[string][]byte{model.ChangeEvent: tbEvents, model.ChangeDispatch: tbDispatches,
	model.ChangeMission: tbMissions}

func (t *tx) RecordIDs(tenantID, kind, after string, limit int) ([]string, error) {
	name, ok := recordBuckets[kind]
	if !ok {
		return nil, fmt.Errorf("RecordIDs: unknown kind %q", kind)
	}
	b, err := t.tbucket(tenantID, name)
	if err != nil {
		return nil, err
	}
	var from []byte
	if after != "" {
		if from, err = idKey(after); err != nil {
			return nil, model.Invalid("after", "after must be a record id")
		}
	}
	var out []string
	c := b.Cursor()
	k, _ := c.First()
	if from != nil {
		k, _ = c.Seek(from)
		if k != nil && string(k) == string(from) {
			k, _ = c.Next()
		}
	}
	for ; k != nil && len(out) < limit; k, _ = c.Next() {
		if len(k) != 16 {
			return nil, fmt.Errorf("RecordIDs: malformed key %x in %s", k, name)
		}
		out = append(out, idString(k))
	}
	return out, nil
}
