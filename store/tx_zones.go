package store

import (
	"encoding/json"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Zones live in the tenant's zones bucket under their code, so a cursor over the bucket
// walks them ordered by code.

func (t *tx) Zone(tenantID, code string) (*model.Zone, error) {
	b, err := t.tbucket(tenantID, tbZones)
	if err != nil {
		return nil, err
	}
	if code == "" {
		return nil, model.NotFound("zone")
	}
	var z model.Zone
	if ok, err := getJSON(b, []byte(code), &z); !ok || err != nil {
		if err == nil {
			err = model.NotFound("zone")
		}
		return nil, err
	}
	return &z, nil
}

func (t *tx) PutZone(tenantID string, z *model.Zone) error {
	t.changed(tenantID)
	b, err := t.tbucket(tenantID, tbZones)
	if err != nil {
		return err
	}
	return putJSON(b, []byte(z.Code), z)
}

func (t *tx) Zones(tenantID string) ([]model.Zone, error) {
	b, err := t.tbucket(tenantID, tbZones)
	if err != nil {
		return nil, err
	}
	out := []model.Zone{}
	err = b.ForEach(func(_, v []byte) error {
		var z model.Zone
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
		return model.NotFound("zone")
	}
	return b.Delete([]byte(code))
}
