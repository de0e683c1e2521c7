package smscodec

import "strings"

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
	MissionCodeTries = 32
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
