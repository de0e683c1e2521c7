package cli

import (
	"log/slog"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// spaceOptions are the free-space thresholds of serve's store, with each change of state
// logged: a warning when space runs low, an error when writes are refused, and a note
// when they are taken again.
func spaceOptions(cfg *ServeConfig, log *slog.Logger) store.SpaceOptions {
	return store.SpaceOptions{MinFree: cfg.DiskMinFreeMB << 20, WarnFree: cfg.DiskWarnFreeMB << 20,
		OnChange: func(s model.Space) {
			switch {
			case s.Full:
				log.Error("the data directory's disk is full: writes are refused until space is freed",
					"free_bytes", s.FreeBytes, "min_free_mb", cfg.DiskMinFreeMB)
			case s.Low:
				log.Warn("the data directory's disk is running out of space: free some, or prune and compact (docs/operations.md)",
					"free_bytes", s.FreeBytes, "warn_free_mb", cfg.DiskWarnFreeMB)
			default:
				log.Info("the data directory's disk has room again", "free_bytes", s.FreeBytes)
			}
		}}
}
