package cli

import (
	"fmt"
	"io"

	"github.com/fieldrelay/fieldrelay/engine/admin"
	"github.com/spf13/cobra"
)

func (a *app) newDeviceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "device",
		Short: "Manage a tenant's field devices",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.newDeviceRevokeCommand())
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
