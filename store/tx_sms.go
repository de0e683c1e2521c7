package store

import (
	"bytes"
	"encoding/json"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Mission codes: tbMissionCodes maps a code (its ASCII bytes) to the 16-byte id of the
// active mission holding it. Inbound SMS: tbSMSInbound maps the record's UUIDv7 (arrival
// order) to the SMSInbound.

func (t *tx) MissionByCode(tenantID, code string) (string, error) {
	b, err := t.tbucket(tenantID, tbMissionCodes)
	if err != nil {
		return "", err
	}
	if code == "" {
		return "", model.NotFound("mission code")
	}
	v := b.Get([]byte(code))
	if len(v) != 16 {
		return "", model.NotFound("mission code")
	}
	return idString(v), nil
}

func (t *tx) PutMissionCode(tenantID, code, missionID string) error {
	b, err := t.tbucket(tenantID, tbMissionCodes)
	if err != nil {
		return err
	}
	if code == "" {
		return model.Invalid("code", "a mission code cannot be empty")
	}
	id, err := idKey(missionID)
	if err != nil {
		return err
	}
	if v := b.Get([]byte(code)); v != nil && !bytes.Equal(v, id) {
		return model.Errorf(model.KindConflict, "mission code %s is taken", code)
	}
	return b.Put([]byte(code), id)
}

func (t *tx) DeleteMissionCode(tenantID, code, missionID string) error {
	b, err := t.tbucket(tenantID, tbMissionCodes)
	if err != nil {
		return err
	}
	if code == "" {
		return nil
	}
	id, err := idKey(missionID)
	if err != nil {
		return nil
	}
	if v := b.Get([]byte(code)); v != nil && bytes.Equal(v, id) {
		return b.Delete([]byte(code))
	}
	return nil
}

func (t *tx) CodedMissions(tenantID string) ([]string, error) {
	b, err := t.tbucket(tenantID, tbMissionCodes)
	if err != nil {
		return nil, err
	}
	var out []string
	err = b.ForEach(func(_, v []byte) error {
		if len(v) == 16 {
			out = append(out, idString(v))
		}
		return nil
	})
	return out, err
}

func (t *tx) PutSMSInbound(tenantID string, m *model.SMSInbound) error {
	b, err := t.tbucket(tenantID, tbSMSInbound)
	if err != nil {
		return err
	}
	k, err := idKey(m.ID)
	if err != nil {
		return err
	}
	b.FillPercent = appendFill
	return putJSON(b, k, m)
}

func (t *tx) SMSInbounds(tenantID string, p model.Page) ([]model.SMSInbound, string, error) {
	b, err := t.tbucket(tenantID, tbSMSInbound)
	if err != nil {
		return nil, "", err
	}
	out := []model.SMSInbound{}
	next, err := listNewestFirst(b, p, 16, func(_, v []byte) error {
		var m model.SMSInbound
		if err := json.Unmarshal(v, &m); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	return out, next, err
}
