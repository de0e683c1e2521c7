package cli

import (
	"fmt"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
	"github.com/spf13/cobra"
)

func (a *app) newCompactCommand() *cobra.Command {
	var f adminFlags
	var keep bool
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Rewrite the database of a stopped node to give its free pages back to the disk",
		Long: "Copy the database into a new file with no free pages, check the copy (the same records, key\n" +
			"for key, and a clean `fieldrelay check`), and only then put it in place of the old file in one\n" +
			"rename. An interrupted or failed compaction leaves the database as it was. It needs free space\n" +
			"for the copy beside the database, and refuses to run while a server holds the data directory.\n" +
			"/metrics shows when it is worth it: fieldrelay_bbolt_free_pages against fieldrelay_bbolt_size_bytes.",
		Example:      "  fieldrelay compact --data /var/lib/fieldrelay",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if f.database != "" {
				return model.Invalid("database", "compact rewrites the bbolt file of --data; a PostgreSQL database is kept by its own tools (VACUUM)")
			}
			if err := offlineDatabase(f.data, "compacting"); err != nil {
				return err
			}
			res, err := store.Compact(f.data, keep, adminLockTimeout)
			if err != nil {
				return offlineOpenError(err, f.data, "compacting")
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Compacted %s: %d → %d bytes (%d records checked) in %.0f ms.\n",
				res.Path, res.Before, res.After, res.Records, res.DurationMs)
			if res.Kept != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "The previous file is kept as %s.\n", res.Kept)
			}
			return nil
		}),
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&keep, "keep-old", false, "keep the previous file beside the new one (DATA/fieldrelay.db.before-compact-TIME)")
	return cmd
}
