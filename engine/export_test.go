package engine

import "io"

// AllocateMissionCode exposes the mission-code allocator with a chosen random source, so
// that tests can force collisions.
func AllocateMissionCode(tx Tx, tenantID, missionID string, rnd io.Reader) (string, error) {
	return allocateMissionCode(tx, tenantID, missionID, rnd)
}
