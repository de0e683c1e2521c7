package store

import (
	"encoding/json"

	"github.com/fieldrelay/fieldrelay/engine"
)

// Zones live in the tenant's zones bucket under their code, so a cursor over the bucket
// walks them ordered by code.

func (t *tx) Zone(tenantID, code string) (*engine.Zone, error) {
	b, err := t.tbucket(tenantID, tbZones)
	if err != nil {
		return nil, err
	}
	if code == "" {
		return nil, engine.NotFound("zone")
	}
	var z engine.Zone
	if ok, err := getJSON(b, []byte(code), &z); !ok || err != nil {
		if err == nil {
			err = engine.NotFound("zone")
		}
		return nil, err
	}
	return &z, nil
}

func (t *tx) PutZone(tenantID string, z *engine.Zone) error {
	t.changed(tenantID)
	b, err := t.tbucket(tenantID, tbZones)
	if err != nil {
		return err
	}
	return putJSON(b, []byte(z.Code), z)
}

func (t *tx) Zones(tenantID string) ([]engine.Zone, error) {
	b, err := t.tbucket(tenantID, tbZones)
	if err != nil {
		return nil, err
	}
	out := []engine.Zone{}
	err = b.ForEach(func(_, v []byte) error {
		var z engine.Zone
		if err := json.Unmarshal(v, &z); err != nil {
			return err
		}
		out = append(out, z)
		return nil
	})
	return out, err
}

func (t *tx) DeleteZone(tenantID, code string) error {
	t.changed(tenantID)
	b, err := t.tbucket(tenantID, tbZones)
	if err != nil {
		return err
	}
	if code == "" || b.Get([]byte(code)) == nil {
		return engine.NotFound("zone")
	}
	return b.Delete([]byte(code))
}
