package cli

import (
	"context"
	"fmt"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
)

// Scheduled snapshots (`serve --backup-every 6h --backup-keep 7`) go to DATA/backups as
// fieldrelay-<UTC time>.db; the names sort by time.
const (
	backupDirName    = "backups"
	backupFilePrefix = "fieldrelay-"
	backupFileSuffix = ".db"
	backupNameLayout = "20060102T150405.000Z"
	minBackupEvery   = time.Minute
)

// backupSchedule takes a snapshot at every tick and keeps the newest ones.
type backupSchedule struct {
	eng  *engine.Engine
	dir  string
	keep int
	// minFree is the free space a snapshot must leave on the disk (serve's
	// --disk-min-free-mb): a snapshot that would leave less is skipped.
	minFree int64
	log     *slog.Logger
	// taken, when set, hears of every snapshot (tests).
	taken func(*admin.BackupResult, error)
}

// run takes a snapshot at each tick until ctx ends. A snapshot under way when ctx ends
// is finished first: the caller waits for run to return before closing the store.
func (b *backupSchedule) run(ctx context.Context, ticks <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			res, err := b.once(context.WithoutCancel(ctx))
			if err != nil {
				b.log.Error("scheduled backup failed", "dir", b.dir, "error", err.Error())
			} else {
				b.log.Info("scheduled backup", "path", res.Path, "bytes", res.Bytes)
			}
			if b.taken != nil {
				b.taken(res, err)
			}
		}
	}
}

// once writes one snapshot named by the engine's clock, then removes the oldest
// snapshots beyond keep.
func (b *backupSchedule) once(ctx context.Context) (*admin.BackupResult, error) {
	if err := b.roomFor(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return nil, err
	}
	name := backupFilePrefix + b.eng.Clock().Now().UTC().Format(backupNameLayout) + backupFileSuffix
	res, err := admin.BackupTo(ctx, b.eng, admin.BackupArgs{Path: filepath.Join(b.dir, name)})
	if err != nil {
		return nil, err
	}
	return res, pruneBackups(b.dir, b.keep)
}

// roomFor refuses a snapshot that would fill the disk: one the size of the database file
// must leave minFree, or writes would be refused
// for a backup (docs/decisions/0112-full-disk.md).
func (b *backupSchedule) roomFor() error {
	sp, ok := b.eng.Space()
	st := b.eng.Stats().Store
	if !ok || sp.FreeBytes < 0 || st == nil {
		return nil
	}
	if need := st.SizeBytes + b.minFree; sp.FreeBytes < need {
		return fmt.Errorf("skipped: the disk has %d bytes free, a snapshot of %d bytes would leave less than %d", sp.FreeBytes, st.SizeBytes, b.minFree)
	}
	return nil
}

// pruneBackups removes the oldest scheduled snapshots of dir beyond keep. Other files
// are left alone.
func pruneBackups(dir string, keep int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasPrefix(n, backupFilePrefix) && strings.HasSuffix(n, backupFileSuffix) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for len(names) > keep {
		if err := os.Remove(filepath.Join(dir, names[0])); err != nil {
			return err
		}
		names = names[1:]
	}
	return nil
}

// startBackups runs the schedule of serve on a ticker; the returned function stops it and
// waits for a snapshot under way.
func startBackups(ctx context.Context, eng *engine.Engine, cfg *ServeConfig, log *slog.Logger) func() {
	if cfg.BackupEvery <= 0 {
		return func() {}
	}
	b := &backupSchedule{eng: eng, dir: filepath.Join(cfg.DataDir, backupDirName), keep: cfg.BackupKeep, log: log,
		minFree: cfg.DiskMinFreeMB << 20}
	ctx, cancel := context.WithCancel(ctx)
	t := time.NewTicker(cfg.BackupEvery)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.run(ctx, t.C)
	}()
	return func() {
		cancel()
		t.Stop()
		<-done
	}
}
