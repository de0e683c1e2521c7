package cli

import (
	"errors"
	"fmt"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
	"github.com/spf13/cobra"
)

func (a *app) newBackupCommand() *cobra.Command {
	var f adminFlags
	var out string
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Write a consistent snapshot of the data directory to a file, also while serving",
		Long: "Write a consistent snapshot of the database to a file (mode 0600). While a server holds the\n" +
			"data directory, the server writes the snapshot, so FILE is a path on the server's machine.",
		Example:      "  fieldrelay backup --data /var/lib/fieldrelay --out /backups/fieldrelay-$(date +%F).db",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if f.database != "" {
				return errDatabaseBackup("backup")
			}
			if out == "" {
				return model.Invalid("out", "--out is required")
			}
			abs, err := filepath.Abs(out)
			if err != nil {
				return err
			}
			return runAdmin(a, cmd, &f, admin.OpBackup, admin.BackupArgs{Path: abs}, func(w io.Writer, res *admin.BackupResult) {
				fmt.Fprintf(w, "Wrote a snapshot of %d bytes to %s.\n", res.Bytes, res.Path)
			})
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&out, "out", "", "file to write the snapshot to (required)")
	return cmd
}

// restoreResult tells what a restore replaced.
type restoreResult struct {
	Path  string `json:"path"`
	From  string `json:"from"`
	Bytes int64  `json:"bytes"`
}

func (a *app) newRestoreCommand() *cobra.Command {
	var f adminFlags
	var in string
	cmd := &cobra.Command{
		Use:   "restore",
		Short: "Replace the database of a stopped node by a snapshot",
		Long: "Replace the database of the data directory by a snapshot made with `fieldrelay backup`. The\n" +
			"snapshot is checked first, and the database is replaced in one rename. It refuses to run while\n" +
			"a server holds the data directory: stop the server, restore, start it again.",
		Example:      "  fieldrelay restore --data /var/lib/fieldrelay --in /backups/fieldrelay-2026-06-09.db",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if f.database != "" {
				return errDatabaseBackup("restore")
			}
			if in == "" {
				return model.Invalid("in", "--in is required")
			}
			res, err := restore(f.data, in)
			if err != nil {
				return err
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Restored %s from %s (%d bytes).\n", res.Path, res.From, res.Bytes)
			return nil
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&in, "in", "", "snapshot to restore (required)")
	return cmd
}

// restore checks that in is a fieldrelay snapshot and atomically puts it in place of the
// database of dataDir, unless a process holds that database.
func restore(dataDir, in string) (*restoreResult, error) {
	if err := checkSnapshot(in); err != nil {
		return nil, err
	}
	if adminAnswers(dataDir) {
		return nil, model.Errorf(model.KindUnavailable,
			"a fieldrelay server is running on %s: stop it before restoring", dataDir)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	dbPath := store.Path(dataDir)
	// Hold the lock that bbolt takes, so that no server opens the old file while it is
	// replaced (a server that opens the new file after the rename is fine).
	unlock, err := lockFile(dbPath)
	if errors.Is(err, store.ErrLocked) {
		return nil, model.Errorf(model.KindUnavailable,
			"the data directory %s is held by another process (a running server?): stop it before restoring", dataDir)
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	src, err := os.Open(in)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var n int64
	err = admin.WriteFileAtomic(dbPath, 0o600, func(f *os.File) (err error) {
		n, err = io.Copy(f, src)
		return err
	})
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(in)
	return &restoreResult{Path: dbPath, From: abs, Bytes: n}, nil
}

// checkSnapshot opens a file read-only as a fieldrelay database.
func checkSnapshot(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return model.Invalid("in", "%s does not exist", path)
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return model.Invalid("in", "%s is not a regular file", path)
	case fi.Size() == 0: // bbolt would try to initialise it
		return model.Invalid("in", "%s is not a fieldrelay snapshot (it is empty)", path)
	}
	db, err := store.OpenFile(path, store.Options{ReadOnly: true, LockTimeout: adminLockTimeout})
	switch {
	case errors.Is(err, store.ErrForeign):
		return model.Invalid("in", "%s is not a fieldrelay snapshot (or it is damaged)", path)
	case errors.Is(err, store.ErrLocked):
		return model.Invalid("in", "%s is in use by another process: give a snapshot made by `fieldrelay backup`", path)
	case err != nil:
		return model.Invalid("in", "%s cannot be restored: %v", path, err)
	}
	return db.Close()
}
