package engine

import (
	"io"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// AllocateMissionCode exposes the mission-code allocator with a chosen random source, so
// that tests can force collisions.
func AllocateMissionCode(tx model.Tx, tenantID, missionID string, rnd io.Reader) (string, error) {
	return allocateMissionCode(tx, tenantID, missionID, rnd)
}
