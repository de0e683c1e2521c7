package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
	"github.com/spf13/cobra"
)

// errReported is the error of a command that has already printed why it failed (a check
// that found problems): the exit code is 1 and nothing more is printed.
var errReported = errors.New("reported")

func (a *app) newCheckCommand() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the database of a stopped node: bbolt's pages and fieldrelay's indexes",
		Long: "Open the database read-only and check it: bbolt's own check (every page reachable once, the\n" +
			"freelist, key order), then fieldrelay's indexes: outbox_due against the outbox (both ways),\n" +
			"events against events_by_idem (both ways, one event per idempotency key), each event's\n" +
			"outstanding messages against the outbox and device queues, and each device's sequence\n" +
			"records against its applied_through, highest_received and waiting count. It writes nothing\n" +
			"and refuses to run while a server holds the data directory. Exit 0 when clean, 1 otherwise.",
		Example:      "  fieldrelay check --data /var/lib/fieldrelay",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if f.database != "" {
				return errDatabaseCheck
			}
			if adminAnswers(f.data) {
				return model.Errorf(model.KindUnavailable,
					"a fieldrelay server is running on %s: stop it before checking", f.data)
			}
			if _, err := os.Stat(store.Path(f.data)); err != nil {
				return model.Invalid("data", "%s holds no fieldrelay database", f.data)
			}
			db, err := store.Open(f.data, store.Options{ReadOnly: true, LockTimeout: adminLockTimeout})
			switch {
			case errors.Is(err, store.ErrLocked):
				return model.Errorf(model.KindUnavailable,
					"the data directory %s is held by another process (a running server?): stop it before checking", f.data)
			case errors.Is(err, store.ErrForeign):
				return model.Invalid("data", "%s", err)
			case err != nil:
				return err
			}
			defer db.Close()
			report, err := db.Check()
			if err != nil {
				return err
			}
			if f.json {
				if err := printJSON(cmd.OutOrStdout(), report); err != nil {
					return err
				}
			} else {
				fmt.Fprint(cmd.OutOrStdout(), store.FormatCheck(report))
			}
			if !report.OK {
				return errReported
			}
			return nil
		}),
	}
	f.register(cmd)
	return cmd
}
