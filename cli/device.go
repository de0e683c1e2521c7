package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/fieldrelay/fieldrelay/engine/admin"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/spf13/cobra"
)

func (a *app) newDeviceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "device",
		Short: "Manage a tenant's field devices",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.newDeviceListCommand(), a.newDeviceRevokeCommand())
	return cmd
}

func (a *app) newDeviceRevokeCommand() *cobra.Command {
	var f adminFlags
	var in admin.DeviceArgs
	cmd := &cobra.Command{
		Use:   "revoke",
		Short: "Revoke a device's credential: its next request is refused",
		Long: "Revoke the credential of a field device (a lost or stolen phone). The device's next sync is\n" +
			"refused; its user signs in again on a device to get a new credential.",
		Example:      "  fieldrelay device revoke --tenant acme --device 0190f3c2-…",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return runAdmin(a, cmd, &f, admin.OpDeviceRevoke, in, func(w io.Writer, res *admin.DeviceResult) {
				fmt.Fprintf(w, "Device %q (id %s): credential revoked.\n", res.Device.Name, res.Device.ID)
			})
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&in.Tenant, "tenant", "", "slug of the tenant (required)")
	cmd.Flags().StringVar(&in.Device, "device", "", "id of the device (required)")
	return cmd
}

func (a *app) newDeviceListCommand() *cobra.Command {
	var f adminFlags
	var in admin.APIKeyListArgs
	cmd := &cobra.Command{
		Use:          "list",
		Short:        "List a tenant's field devices and their credentials, newest first",
		Example:      "  fieldrelay device list --tenant acme",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return runAdmin(a, cmd, &f, admin.OpDeviceList, in, func(w io.Writer, res *admin.DeviceListResult) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tPLATFORM\tTEAM\tLAST SYNC\tCREDENTIAL")
				for _, d := range res.Data {
					team := "-"
					if d.TeamID != nil {
						team = *d.TeamID
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Name, d.Platform, team,
						fmtTimePtr(d.Sync.LastSyncAt, "never"), credentialState(d.Credential))
				}
				_ = tw.Flush()
			})
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&in.Tenant, "tenant", "", "slug of the tenant (required)")
	return cmd
}

// credentialState says in a word where a device's credential stands.
func credentialState(c *model.DeviceCredential) string {
	switch {
	case c == nil:
		return "none"
	case c.RevokedAt != nil:
		return "revoked " + fmtTime(*c.RevokedAt)
	default:
		return "issued " + fmtTime(c.IssuedAt) + ", expires " + fmtTime(c.ExpiresAt)
	}
}
