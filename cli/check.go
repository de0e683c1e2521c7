package cli

import (
	"errors"
	"fmt"

	"github.com/fieldrelay/fieldrelay/store"
	"github.com/spf13/cobra"
)

// errReported is the error of a command that has already printed why it failed (a check
// that found problems): the exit code is 1 and nothing more is printed.
var errReported = errors.New("reported")

func (a *app) newCheckCommand() *cobra.Command {
	var f adminFlags
	var stats bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the database of a stopped node: bbolt's pages and fieldrelay's indexes",
		Long: "Open the database read-only and check it: bbolt's own check (every page reachable once, the\n" +
			"freelist, key order), then fieldrelay's indexes: outbox_due against the outbox (both ways),\n" +
			"events against events_by_idem (both ways, one event per idempotency key), each event's\n" +
			"outstanding messages against the outbox and device queues, and each device's sequence\n" +
			"records against its applied_through, highest_received and waiting count. It writes nothing\n" +
			"and refuses to run while a server holds the data directory. Exit 0 when clean, 1 otherwise.\n" +
			"With --stats it also reports where the file's bytes go: for each kind of bucket (a tenant's\n" +
			"buckets summed over the tenants, as t/*/NAME) its keys, branch and leaf pages, bytes and fill,\n" +
			"and the file's size and free pages.",
		Example:      "  fieldrelay check --data /var/lib/fieldrelay\n  fieldrelay check --stats --data /var/lib/fieldrelay",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if f.database != "" {
				return errDatabaseCheck
			}
			if err := offlineDatabase(f.data, "checking"); err != nil {
				return err
			}
			db, err := store.Open(f.data, store.Options{ReadOnly: true, LockTimeout: adminLockTimeout})
			if err != nil {
				return offlineOpenError(err, f.data, "checking")
			}
			defer db.Close()
			report, err := db.Check()
			if err != nil {
				return err
			}
			if stats {
				if report.Footprint, err = db.Footprint(); err != nil {
					return err
				}
			}
			if f.json {
				if err := printJSON(cmd.OutOrStdout(), report); err != nil {
					return err
				}
			} else {
				fmt.Fprint(cmd.OutOrStdout(), store.FormatCheck(report))
				if report.Footprint != nil {
					fmt.Fprint(cmd.OutOrStdout(), store.FormatFootprint(report.Footprint))
				}
			}
			if !report.OK {
				return errReported
			}
			return nil
		}),
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&stats, "stats", false, "also report the pages, bytes and fill of each kind of bucket and the file's free pages")
	return cmd
}
