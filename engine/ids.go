package engine

import (
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// idSource makes the engine's time-ordered record ids (UUIDv7 of the engine clock's
// millisecond) so that they never go backwards: when the wall clock steps back (a laptop
// whose clock is set right by hand), ids keep the last millisecond and count on in the 12
// bits after the version, so lists newest first stay in insertion order and no two ids
// collide (docs/decisions/0116-ids-clock-steps.md).
type idSource struct {
	last atomic.Uint64 // millisecond << 12 | count
}

// at returns the id of a record made at t.
func (s *idSource) at(t time.Time) string {
	want := uint64(max(t.UnixMilli(), 0)) << 12
	for {
		last := s.last.Load()
		next := max(want, last+1)
		if s.last.CompareAndSwap(last, next) {
			return model.NewIDSeq(next>>12, uint16(next&0xfff))
		}
	}
}
