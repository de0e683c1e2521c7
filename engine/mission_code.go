package engine

import (
	"crypto/rand"
	"fmt"
	"io"
	"strings"
)

// Mission codes. Every dispatched mission gets a short code that its team quotes in SMS
// replies (FR1 ACK <code>): MissionCodeLen characters of MissionCodeAlphabet, which
// leaves out 0/O, 1/I/L so that a code read off a small screen is typed back right. A code
// is unique among the tenant's ACTIVE missions: it is indexed (code → mission id) in the
// dispatch transaction and released in the transaction where the mission reaches
// COMPLETED or FAILED, after which another mission may draw it again.
const (
	MissionCodeAlphabet = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
	MissionCodeLen      = 5
	// missionCodeTries bounds the draws of one allocation: with 31^5 (28.6 million) codes
	// and a few thousand active missions, a draw collides once in thousands, so 32
	// collisions in a row mean the source is broken, not the tenant busy.
	missionCodeTries = 32
)

// ValidMissionCode reports whether s is a well-formed mission code (upper case).
func ValidMissionCode(s string) bool {
	if len(s) != MissionCodeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(MissionCodeAlphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}

// drawMissionCode reads a uniformly drawn code from rnd (bytes above the largest multiple
// of the alphabet's size are rejected, so that no character is more likely).
func drawMissionCode(rnd io.Reader) (string, error) {
	const n = len(MissionCodeAlphabet)
	const limit = 256 / n * n
	out := make([]byte, 0, MissionCodeLen)
	var buf [MissionCodeLen]byte
	for len(out) < MissionCodeLen {
		// Read only what is still missing: no byte of the source is thrown away unseen.
		need := buf[:MissionCodeLen-len(out)]
		if _, err := io.ReadFull(rnd, need); err != nil {
			return "", fmt.Errorf("drawing a mission code: %w", err)
		}
		for _, b := range need {
			if int(b) < limit {
				out = append(out, MissionCodeAlphabet[int(b)%n])
			}
		}
	}
	return string(out), nil
}

// allocateMissionCode draws a code no active mission of the tenant holds and indexes it
// for missionID, within tx. rnd is the random source (crypto/rand in production).
func allocateMissionCode(tx Tx, tenantID, missionID string, rnd io.Reader) (string, error) {
	for range missionCodeTries {
		code, err := drawMissionCode(rnd)
		if err != nil {
			return "", Internal(err)
		}
		err = tx.PutMissionCode(tenantID, code, missionID)
		if IsKind(err, KindConflict) {
			continue
		}
		if err != nil {
			return "", err
		}
		return code, nil
	}
	return "", Internal(fmt.Errorf("no free mission code after %d draws", missionCodeTries))
}

// newMissionCode gives a new mission its code (see allocateMissionCode).
func newMissionCode(tx Tx, tenantID, missionID string) (string, error) {
	return allocateMissionCode(tx, tenantID, missionID, rand.Reader)
}

// releaseMissionCode frees the code of a finished mission, within tx. Missions dispatched
// before codes existed have none.
func releaseMissionCode(tx Tx, tenantID string, m *Mission) error {
	if m.Code == "" {
		return nil
	}
	return tx.DeleteMissionCode(tenantID, m.Code, m.ID)
}
