package cli

import (
	"fmt"
	"log/slog"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/spf13/cobra"
)

// newMigrateCommand is `fieldrelay migrate --database URL [--grant ROLE]`: the owner of
// the tables creates or migrates the schema, so that the processes may serve as a role that
// only reads and writes rows (docs/decisions/0223-least-privilege.md).
func (a *app) newMigrateCommand() *cobra.Command {
	var database, grant string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or migrate the schema of a central tier's database, as the role that owns its tables",
		Long: "Create or migrate the schema of the PostgreSQL database of --database, as the URL's role, which then\n" +
			"owns the tables. With --grant ROLE, grant ROLE what a serving process needs (rows of every table,\n" +
			"today's and later migrations'), so that `serve` can run as ROLE, which cannot migrate: it refuses a\n" +
			"schema older than its binary and names this command.",
		Example: `  fieldrelay migrate --database postgres://fieldrelay_owner@db.internal/fieldrelay --grant fieldrelay_app`,
		Args:    cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if database == "" {
				return model.Invalid("database", "--database is required")
			}
			if err := checkDatabaseURL(database); err != nil {
				return err
			}
			log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
			v, err := postgres.Migrate(cmd.Context(), database, grant, log)
			if err != nil {
				return databaseOpenError(database, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schema version %d\n", v)
			if grant != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "granted %s:\n%s", grant, postgres.GrantsSQL(grant))
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&database, "database", "", "postgres:// URL of the central tier's database, as the role that owns (or will own) its tables")
	cmd.Flags().StringVar(&grant, "grant", "", "role to grant what serving needs (it must exist: CREATE ROLE … LOGIN PASSWORD …)")
	return cmd
}
