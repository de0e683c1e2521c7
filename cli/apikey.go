package cli

import (
	"fmt"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/spf13/cobra"
)

func (a *app) newAPIKeyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apikey",
		Short: "Create, list and rotate a tenant's API keys",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.newAPIKeyCreateCommand(), a.newAPIKeyListCommand(), a.newAPIKeyRotateCommand())
	return cmd
}

func (a *app) newAPIKeyCreateCommand() *cobra.Command {
	var f adminFlags
	var in admin.APIKeyCreateArgs
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an API key for a tenant (shown once)",
		Example: `  fieldrelay apikey create --tenant acme --name "dispatch console"
  fieldrelay apikey create --tenant acme --name "sms gateway" --scopes sms:inbound --json`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return runAdmin(a, cmd, &f, admin.OpAPIKeyCreate, in, printNewKey)
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&in.Tenant, "tenant", "", "slug of the tenant (required)")
	cmd.Flags().StringVar(&in.Name, "name", "", `name of the key (default "api key")`)
	cmd.Flags().StringSliceVar(&in.Scopes, "scopes", nil, "scopes, comma-separated (default: every scope but sms:inbound)")
	return cmd
}

func printNewKey(w io.Writer, k *model.NewKey) {
	fmt.Fprintf(w, "API key %q (id %s, scopes %s)\n", k.Key.Name, k.Key.ID, strings.Join(k.Key.Scopes, ","))
	fmt.Fprintf(w, "Key (shown once, keep it secret): %s\n", k.APIKey)
	if k.PreviousKeyExpiresAt != nil {
		fmt.Fprintf(w, "The previous key stays valid until %s.\n", fmtTime(*k.PreviousKeyExpiresAt))
	}
}

func (a *app) newAPIKeyListCommand() *cobra.Command {
	var f adminFlags
	var in admin.APIKeyListArgs
	cmd := &cobra.Command{
		Use:          "list",
		Short:        "List a tenant's active API keys (prefix only), newest first",
		Example:      "  fieldrelay apikey list --tenant acme",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return runAdmin(a, cmd, &f, admin.OpAPIKeyList, in, func(w io.Writer, res *admin.APIKeyListResult) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tCREATED\tLAST USED\tEXPIRES\tSCOPES")
				for _, k := range res.Data {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, fmtTime(k.CreatedAt),
						fmtTimePtr(k.LastUsedAt, "never"), fmtTimePtr(k.ExpiresAt, "never"), strings.Join(k.Scopes, ","))
				}
				_ = tw.Flush()
			})
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&in.Tenant, "tenant", "", "slug of the tenant (required)")
	return cmd
}

func fmtTimePtr(t *model.Time, none string) string {
	if t == nil {
		return none
	}
	return fmtTime(*t)
}

func (a *app) newAPIKeyRotateCommand() *cobra.Command {
	var f adminFlags
	var in admin.APIKeyRotateArgs
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Replace an API key by a new one; the old key stays valid for a grace period",
		Long: "Replace an API key by a new one with the same name and scopes. The old key stays valid for\n" +
			"the grace period (at most 168h). Without --key, the tenant's oldest key without an expiry is rotated.",
		Example: `  fieldrelay apikey rotate --tenant acme
  fieldrelay apikey rotate --tenant acme --key 0190f3c2-… --grace 1h --json`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if grace < 0 || grace > engine.MaxGraceMin*time.Minute {
				return model.Invalid("grace", "--grace must be between 0 and %s", engine.MaxGraceMin*time.Minute)
			}
			// Whole minutes, rounded up: a grace is never shorter than asked (59s is 1m).
			minutes := model.Int((grace + time.Minute - 1) / time.Minute)
			in.GracePeriodMinutes = &minutes
			return runAdmin(a, cmd, &f, admin.OpAPIKeyRotate, in, printNewKey)
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&in.Tenant, "tenant", "", "slug of the tenant (required)")
	cmd.Flags().StringVar(&in.KeyID, "key", "", "id of the key to rotate (default: the oldest key without an expiry)")
	cmd.Flags().DurationVar(&grace, "grace", engine.DefaultGraceMin*time.Minute, "how long the old key stays valid (rounded up to whole minutes; 0 ends it at once)")
	return cmd
}
