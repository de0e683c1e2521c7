package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/spf13/cobra"
)

// newSecretsCommand is `fieldrelay secrets`: the key file of a central tier's encrypted
// secrets (docs/decisions/0224-secrets-encrypted-at-rest.md).
func (a *app) newSecretsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Make and rotate the key file that encrypts a central tier's secrets",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSecretsKeygenCommand(), a.newSecretsRotateCommand())
	return cmd
}

func newSecretsKeygenCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen FILE",
		Short: "Write a new key file (mode 0600; an existing file is never overwritten)",
		Long: "Write a new key file for `serve --secret-key-file` and the admin commands with --database: the\n" +
			"base64 of 32 random bytes. Keep it out of the database's backups, with the same care as the\n" +
			"database's password: whoever holds it and a copy of the database reads its secrets.",
		Example: "  fieldrelay secrets keygen /etc/fieldrelay/secret.key",
		Args:    cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if errors.Is(err, fs.ErrExist) {
				return model.Invalid("file", "%s exists: a key file is never overwritten (rotate to a new file)", args[0])
			}
			if err != nil {
				return err
			}
			if _, err := f.Write(postgres.NewSecretKeyFile()); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			k, err := postgres.ReadSecretKeyFile(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote the key %s to %s\n", k.ID(), args[0])
			return nil
		}),
	}
}

func (a *app) newSecretsRotateCommand() *cobra.Command {
	var database, oldFile, newFile string
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Encrypt the data key of a central tier's secrets under a new key file",
		Long: "Wrap the data key of the secrets of the database of --database under the key of --new-key-file\n" +
			"instead of --old-key-file's, in one transaction. The processes that serve the database go on;\n" +
			"start each again with --secret-key-file set to the new file: the old key is refused from then on.",
		Example: "  fieldrelay secrets keygen /etc/fieldrelay/secret.key.new\n" +
			"  fieldrelay secrets rotate --database \"$FIELDRELAY_DATABASE\" --old-key-file /etc/fieldrelay/secret.key --new-key-file /etc/fieldrelay/secret.key.new",
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if database == "" {
				return model.Invalid("database", "--database is required")
			}
			if err := checkDatabaseURL(database); err != nil {
				return err
			}
			if oldFile == "" || newFile == "" {
				return model.Invalid("new-key-file", "--old-key-file and --new-key-file are required")
			}
			oldKey, err := postgres.ReadSecretKeyFile(oldFile)
			if err != nil {
				return model.Invalid("old-key-file", "--old-key-file: %v", err)
			}
			newKey, err := postgres.ReadSecretKeyFile(newFile)
			if err != nil {
				return model.Invalid("new-key-file", "--new-key-file: %v", err)
			}
			if oldKey.ID() == newKey.ID() {
				return model.Invalid("new-key-file", "--new-key-file holds the key of --old-key-file")
			}
			err = postgres.RotateSecretKey(cmd.Context(), database, oldKey, newKey, postgres.Options{Log: slog.New(slog.DiscardHandler), MaxConns: 2})
			var mismatch *postgres.SecretKeyMismatchError
			if errors.As(err, &mismatch) {
				return model.Invalid("old-key-file", "--old-key-file: %v", err)
			}
			if err != nil {
				return databaseOpenError(database, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "the secrets are encrypted under the key %s (was %s)\n", newKey.ID(), oldKey.ID())
			return nil
		}),
	}
	cmd.Flags().StringVar(&database, "database", "", "postgres:// URL of the central tier's database")
	cmd.Flags().StringVar(&oldFile, "old-key-file", "", "the key file the database's secrets are encrypted under")
	cmd.Flags().StringVar(&newFile, "new-key-file", "", "the key file to encrypt them under (fieldrelay secrets keygen FILE)")
	return cmd
}
