package store

import (
	"bytes"

	"github.com/fieldrelay/fieldrelay/engine"
)

// Mission codes: tbMissionCodes maps a code (its ASCII bytes) to the 16-byte id of the
// active mission holding it.

func (t *tx) MissionByCode(tenantID, code string) (string, error) {
	b, err := t.tbucket(tenantID, tbMissionCodes)
	if err != nil {
		return "", err
	}
	if code == "" {
		return "", engine.NotFound("mission code")
	}
	v := b.Get([]byte(code))
	if len(v) != 16 {
		return "", engine.NotFound("mission code")
	}
	return idString(v), nil
}

func (t *tx) PutMissionCode(tenantID, code, missionID string) error {
	b, err := t.tbucket(tenantID, tbMissionCodes)
	if err != nil {
		return err
	}
	if code == "" {
		return engine.Invalid("code", "a mission code cannot be empty")
	}
	id, err := idKey(missionID)
	if err != nil {
		return err
	}
	if v := b.Get([]byte(code)); v != nil && !bytes.Equal(v, id) {
		return engine.Errorf(engine.KindConflict, "mission code %s is taken", code)
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
