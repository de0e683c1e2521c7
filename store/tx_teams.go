package store

import (
	"encoding/json"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The teams of model.Tx.

func (t *tx) Team(tenantID, id string) (*model.Team, error) {
	b, err := t.tbucket(tenantID, tbTeams)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("team")
	}
	var tm model.Team
	if ok, err := getJSON(b, k, &tm); !ok || err != nil {
		if err == nil {
			err = model.NotFound("team")
		}
		return nil, err
	}
	return &tm, nil
}

func (t *tx) PutTeam(tenantID string, tm *model.Team) error {
	t.changed(tenantID)
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

func (t *tx) DeleteTeam(tenantID, id string) error {
	t.changed(tenantID)
	b, err := t.tbucket(tenantID, tbTeams)
	if err != nil {
		return err
	}
	k, err := idKey(id)
	if err != nil || b.Get(k) == nil {
		return model.NotFound("team")
	}
	return b.Delete(k)
}

func (t *tx) Teams(tenantID string) ([]model.Team, error) {
	b, err := t.tbucket(tenantID, tbTeams)
	if err != nil {
		return nil, err
	}
	out := []model.Team{}
	if t.db == nil {
		err = b.ForEach(func(_, v []byte) error {
			var tm model.Team
			if err := json.Unmarshal(v, &tm); err != nil {
				return err
			}
			out = append(out, tm)
			return nil
		})
		return out, err
	}
	tk, err := idKey(tenantID)
	if err != nil {
		return nil, err
	}
	var cached []*model.Team
	err = b.ForEach(func(k, v []byte) error {
		tm, err := t.db.teams.decode(tk, k, v)
		if err != nil {
			return err
		}
		cached = append(cached, tm)
		return nil
	})
	if err != nil || len(cached) == 0 {
		return out, err
	}
	return model.CloneTeams(cached), nil
}
