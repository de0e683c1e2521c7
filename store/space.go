package store

import (
	"path/filepath"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// DefaultSpaceProbeEvery is how long a probe of the free space holds: writes look at it
// without a system call, and a refused write is tried again at most this often.
const DefaultSpaceProbeEvery = time.Second

// SpaceOptions set how the store watches the free space of its filesystem
// (docs/decisions/0112-full-disk.md).
type SpaceOptions struct {
	// MinFree: writes are refused while fewer bytes are free (0: only a write that failed
	// for want of space refuses the next ones, until a probe finds room).
	MinFree int64
	// WarnFree: Space().Low below it (0: never low).
	WarnFree int64
	// Probe returns the free bytes of the filesystem holding dir; statfs when nil. Tests
	// replace it.
	Probe func(dir string) (int64, error)
	// ProbeEvery is how long a probe holds (DefaultSpaceProbeEvery when zero).
	ProbeEvery time.Duration
	// OnChange is told each change of Space's Low or Full (for the log); it must not use
	// the store.
	OnChange func(model.Space)
}

// spaceGuard refuses writes while the disk is full, so that they fail at once with a
// clear error rather than each one growing the file into ENOSPC.
type spaceGuard struct {
	dir   string
	opt   SpaceOptions
	epoch time.Time // the monotonic origin of next

	mu    sync.Mutex
	next  time.Duration // since epoch: when the probe is stale
	state model.Space
	// failed is set by a write that failed for want of space: Full until a later probe
	// finds more room than there was then.
	failed     bool
	failedFree int64
}

func newSpaceGuard(path string, opt SpaceOptions) *spaceGuard {
	if opt.Probe == nil {
		opt.Probe = freeSpace
	}
	if opt.ProbeEvery <= 0 {
		opt.ProbeEvery = DefaultSpaceProbeEvery
	}
	g := &spaceGuard{dir: filepath.Dir(path), opt: opt, epoch: time.Now()}
	g.set(g.probe()) // a disk already low or full at start is logged
	return g
}

// check returns DiskFull while writes are refused, probing again when the last probe is
// stale.
func (g *spaceGuard) check() error {
	if g != nil && g.current().Full {
		return model.DiskFull(nil)
	}
	return nil
}

// current returns the space state, probing again when the last probe is stale.
func (g *spaceGuard) current() model.Space {
	now := time.Since(g.epoch)
	g.mu.Lock()
	defer g.mu.Unlock()
	if now >= g.next {
		g.next = now + g.opt.ProbeEvery
		g.set(g.probe())
	}
	return g.state
}

// failedWrite turns a write's error into DiskFull when it failed for want of space, and
// holds writes refused until a probe finds more room.
func (g *spaceGuard) failedWrite(err error) error {
	if g == nil || err == nil || !isNoSpace(err) {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failed = true
	g.failedFree, _ = g.opt.Probe(g.dir)
	g.next = time.Since(g.epoch) + g.opt.ProbeEvery
	s := g.probe()
	s.Full = true // even should the probe have found a byte more since
	g.set(s)
	return model.DiskFull(err)
}

// probe reads the free space and derives the state (g.mu held, or g not shared yet).
func (g *spaceGuard) probe() model.Space {
	free, err := g.opt.Probe(g.dir)
	if err != nil || free < 0 {
		// Unknown: a failed write refuses the others until this probe, one second on.
		g.failed = false
		return model.Space{FreeBytes: -1}
	}
	if g.failed && free > g.failedFree {
		g.failed = false
	}
	return model.Space{FreeBytes: free, Low: free < g.opt.WarnFree,
		Full: g.failed || free < g.opt.MinFree}
}

// set stores s and tells OnChange when Low or Full changed (g.mu held).
func (g *spaceGuard) set(s model.Space) {
	old := g.state
	g.state = s
	if (old.Low != s.Low || old.Full != s.Full) && g.opt.OnChange != nil {
		g.opt.OnChange(s)
	}
}

// Space returns the free space of the database's filesystem and whether writes are
// refused (model.SpaceStore).
func (db *DB) Space() model.Space {
	if db.space == nil { // read-only
		return model.Space{FreeBytes: -1}
	}
	return db.space.current()
}
