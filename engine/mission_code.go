package engine

import (
	"crypto/rand"
	"fmt"
	"io"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// drawMissionCode reads a uniformly drawn code from rnd (bytes above the largest multiple
// of the alphabet's size are rejected, so that no character is more likely).
func drawMissionCode(rnd io.Reader) (string, error) {
	const n = len(smscodec.MissionCodeAlphabet)
	const limit = 256 / n * n
	out := make([]byte, 0, smscodec.MissionCodeLen)
	var buf [smscodec.MissionCodeLen]byte
	for len(out) < smscodec.MissionCodeLen {
		// Read only what is still missing: no byte of the source is thrown away unseen.
		need := buf[:smscodec.MissionCodeLen-len(out)]
		if _, err := io.ReadFull(rnd, need); err != nil {
			return "", fmt.Errorf("drawing a mission code: %w", err)
		}
		for _, b := range need {
			if int(b) < limit {
				out = append(out, smscodec.MissionCodeAlphabet[int(b)%n])
			}
		}
	}
	return string(out), nil
}

// allocateMissionCode draws a code no active mission of the tenant holds and indexes it
// for missionID, within tx. rnd is the random source (crypto/rand in production).
func allocateMissionCode(tx model.Tx, tenantID, missionID string, rnd io.Reader) (string, error) {
	for range smscodec.MissionCodeTries {
		code, err := drawMissionCode(rnd)
		if err != nil {
			return "", model.Internal(err)
		}
		err = tx.PutMissionCode(tenantID, code, missionID)
		if model.IsKind(err, model.KindConflict) {
			continue
		}
		if err != nil {
			return "", err
		}
		return code, nil
	}
	return "", model.Internal(fmt.Errorf("no free mission code after %d draws", smscodec.MissionCodeTries))
}

// newMissionCode gives a new mission its code (see allocateMissionCode).
func newMissionCode(tx model.Tx, tenantID, missionID string) (string, error) {
	return allocateMissionCode(tx, tenantID, missionID, rand.Reader)
}

// releaseMissionCode frees the code of a finished mission, within tx. Missions dispatched
// before codes existed have none.
func releaseMissionCode(tx model.Tx, tenantID string, m *model.Mission) error {
	if m.Code == "" {
		return nil
	}
	return tx.DeleteMissionCode(tenantID, m.Code, m.ID)
}
