package store

import (
	"bytes"
	"encoding/json"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func (t *tx) Mission(tenantID, id string) (*model.Mission, error) {
	b, err := t.tbucket(tenantID, tbMissions)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("mission")
	}
	var m model.Mission
	if ok, err := getJSON(b, k, &m); !ok || err != nil {
		if err == nil {
			err = model.NotFound("mission")
		}
		return nil, err
	}
	return &m, nil
}

// PutMission stores m; a new mission also enters the indexes by event and by team (a
// mission never changes event or team).
func (t *tx) PutMission(tenantID string, m *model.Mission) error {
	b, err := t.tbucket(tenantID, tbMissions)
	if err != nil {
		return err
	}
	k, err := idKey(m.ID)
	if err != nil {
		return err
	}
	if b.Get(k) == nil {
		byEvent, err := pair(m.EventID, m.ID)
		if err != nil {
			return err
		}
		byTeam, err := pair(m.TeamID, m.ID)
		if err != nil {
			return err
		}
		tb, _ := t.tenant(tenantID)
		if err := tb.Bucket(tbMissionsByEvent).Put(byEvent, nil); err != nil {
			return err
		}
		if err := tb.Bucket(tbMissionsByTeam).Put(byTeam, nil); err != nil {
			return err
		}
	}
	b.FillPercent = appendFill
	return putJSON(b, k, m)
}

// Missions walks the missions newest first; with a single team it walks that team's
// index instead of every mission.
func (t *tx) Missions(tenantID string, f model.MissionFilter, p model.Page) ([]model.Mission, string, error) {
	b, err := t.tbucket(tenantID, tbMissions)
	if err != nil {
		return nil, "", err
	}
	out := []model.Mission{}
	if f.TeamIDs != nil && len(f.TeamIDs) == 0 {
		return out, "", nil
	}
	if len(f.TeamIDs) == 1 {
		return t.teamMissions(tenantID, f, p)
	}
	c := b.Cursor()
	var k, v []byte
	if p.Cursor != "" {
		after, err := decodeCursor(p.Cursor, 16)
		if err != nil {
			return nil, "", err
		}
		k, v = seekBefore(c, after)
	} else {
		k, v = c.Last()
	}
	var last []byte
	size := 0 // of the page's stored JSON
	for ; k != nil; k, v = c.Prev() {
		var m model.Mission
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, "", err
		}
		if !f.Match(&m) {
			continue
		}
		if p.Full(len(out), size, len(v)) {
			return out, encodeCursor(last), nil
		}
		out = append(out, m)
		last = bytes.Clone(k)
		size += len(v)
	}
	return out, "", nil
}

// teamMissions walks one team's index newest first (mission ids are time-ordered).
func (t *tx) teamMissions(tenantID string, f model.MissionFilter, p model.Page) ([]model.Mission, string, error) {
	tb, err := t.tenant(tenantID)
	if err != nil {
		return nil, "", err
	}
	team, err := idKey(f.TeamIDs[0])
	if err != nil {
		return []model.Mission{}, "", nil
	}
	bound := append(bytes.Clone(team), bytes.Repeat([]byte{0xff}, 16)...)
	if p.Cursor != "" {
		after, err := decodeCursor(p.Cursor, 16)
		if err != nil {
			return nil, "", err
		}
		bound = append(bytes.Clone(team), after...)
	}
	out := []model.Mission{}
	var last []byte
	size := 0 // of the page's stored JSON
	missions := tb.Bucket(tbMissions)
	c := tb.Bucket(tbMissionsByTeam).Cursor()
	for k, _ := seekBefore(c, bound); k != nil && bytes.HasPrefix(k, team); k, _ = c.Prev() {
		v := missions.Get(k[16:])
		if v == nil {
			return nil, "", model.NotFound("mission")
		}
		var m model.Mission
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, "", err
		}
		if !f.Match(&m) {
			continue
		}
		if p.Full(len(out), size, len(v)) {
			return out, encodeCursor(last), nil
		}
		out = append(out, m)
		last = bytes.Clone(k[16:])
		size += len(v)
	}
	return out, "", nil
}

func (t *tx) MissionsOfEvent(tenantID, eventID string) ([]model.Mission, error) {
	tb, err := t.tenant(tenantID)
	if err != nil {
		return nil, err
	}
	ek, err := idKey(eventID)
	if err != nil {
		return nil, nil
	}
	var out []model.Mission
	c := tb.Bucket(tbMissionsByEvent).Cursor()
	for k, _ := c.Seek(ek); k != nil && bytes.HasPrefix(k, ek); k, _ = c.Next() {
		m, err := t.Mission(tenantID, idString(k[16:]))
		if err != nil {
			return nil, err
		}
		out = append(out, *m)
	}
	return out, nil
}

func (t *tx) PutDispatch(tenantID string, d *model.Dispatch) error {
	b, err := t.tbucket(tenantID, tbDispatches)
	if err != nil {
		return err
	}
	k, err := idKey(d.ID)
	if err != nil {
		return err
	}
	b.FillPercent = appendFill
	return putJSON(b, k, d)
}

func (t *tx) Dispatch(tenantID, id string) (*model.Dispatch, error) {
	b, err := t.tbucket(tenantID, tbDispatches)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("dispatch")
	}
	var d model.Dispatch
	if ok, err := getJSON(b, k, &d); !ok || err != nil {
		if err == nil {
			err = model.NotFound("dispatch")
		}
		return nil, err
	}
	return &d, nil
}

func (t *tx) PutLedgerEntry(tenantID string, e *model.LedgerEntry) error {
	b, err := t.tbucket(tenantID, tbLedger)
	if err != nil {
		return err
	}
	k, err := idKey(e.ID)
	if err != nil {
		return err
	}
	b.FillPercent = appendFill
	return putJSON(b, k, e)
}

func (t *tx) PutDispatchRequest(tenantID string, r *model.DispatchRequest) error {
	b, err := t.tbucket(tenantID, tbDispatchRequests)
	if err != nil {
		return err
	}
	k, err := idKey(r.ID)
	if err != nil {
		return err
	}
	return putJSON(b, k, r)
}

func (t *tx) DispatchRequest(tenantID, id string) (*model.DispatchRequest, error) {
	b, err := t.tbucket(tenantID, tbDispatchRequests)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("dispatch request")
	}
	var r model.DispatchRequest
	if ok, err := getJSON(b, k, &r); !ok || err != nil {
		if err == nil {
			err = model.NotFound("dispatch request")
		}
		return nil, err
	}
	return &r, nil
}
