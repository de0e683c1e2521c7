package cli

import (
	"fmt"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/spf13/cobra"
)

func (a *app) newTenantCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenant",
		Short: "Create, list, show, suspend and activate tenants",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(
		a.newTenantCreateCommand(),
		a.newTenantListCommand(),
		a.newTenantShowCommand("show", "Show a tenant", admin.OpTenantShow),
		a.newTenantShowCommand("suspend", "Suspend a tenant: its credentials then only reach GET /v1/tenant/me", admin.OpTenantSuspend),
		a.newTenantShowCommand("activate", "Activate a suspended or inactive tenant", admin.OpTenantActivate),
	)
	return cmd
}

func (a *app) newTenantCreateCommand() *cobra.Command {
	var f adminFlags
	var in model.CreateTenantInput
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a tenant and its first API key",
		Long: "Create an active tenant and its first API key, which holds every key scope but sms:inbound.\n" +
			"The key is shown once.",
		Example: `  fieldrelay tenant create --name "Acme Field Ops" --slug acme --email ops@acme.example --country FR --plan core
  fieldrelay tenant create --name Acme --slug acme --email ops@acme.example --country FR --verticals emergency,healthcare --json`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return runAdmin(a, cmd, &f, admin.OpTenantCreate, in, func(w io.Writer, res *model.CreatedTenant) {
				fmt.Fprintf(w, "Created tenant %q (slug %s, id %s).\n", res.Tenant.Name, res.Tenant.Slug, res.Tenant.ID)
				fmt.Fprintf(w, "API key (shown once, keep it secret): %s\n", res.APIKey)
			})
		}),
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&in.Name, "name", "", "organisation name (required)")
	fl.StringVar(&in.Slug, "slug", "", "URL-safe identifier (required)")
	fl.StringVar(&in.Email, "email", "", "contact address (required)")
	fl.StringVar(&in.Country, "country", "", "ISO 3166-1 alpha-2 country code (required)")
	fl.StringVar(&in.Plan, "plan", engine.PlanStarter, "plan: starter, core or mission-critical")
	fl.StringSliceVar(&in.Verticals, "verticals", nil, "active verticals, comma-separated (default: the seven standard ones)")
	return cmd
}

func (a *app) newTenantListCommand() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:          "list",
		Short:        "List the tenants, oldest first",
		Example:      "  fieldrelay tenant list --data /var/lib/fieldrelay",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return runAdmin(a, cmd, &f, admin.OpTenantList, struct{}{}, func(w io.Writer, res *admin.TenantListResult) {
				if res.Count == 0 {
					fmt.Fprintln(w, "No tenants.")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SLUG\tNAME\tSTATUS\tPLAN\tCOUNTRY\tID")
				for _, t := range res.Data {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Slug, t.Name, t.Status, t.LicenseType, t.Country, t.ID)
				}
				_ = tw.Flush()
			})
		}),
	}
	f.register(cmd)
	return cmd
}

// newTenantShowCommand makes the commands that take a slug and print the tenant: show,
// suspend and activate.
func (a *app) newTenantShowCommand(use, short, op string) *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:          use + " SLUG",
		Short:        short,
		Example:      fmt.Sprintf("  fieldrelay tenant %s acme\n  fieldrelay tenant %s acme --json", use, use),
		Args:         exactArgs(1),
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return runAdmin(a, cmd, &f, op, admin.SlugArgs{Slug: args[0]}, func(w io.Writer, res *admin.TenantResult) {
				printTenant(w, res.Tenant)
			})
		}),
	}
	f.register(cmd)
	return cmd
}

func printTenant(w io.Writer, t *model.Tenant) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", t.ID)
	fmt.Fprintf(tw, "name:\t%s\n", t.Name)
	fmt.Fprintf(tw, "slug:\t%s\n", t.Slug)
	fmt.Fprintf(tw, "email:\t%s\n", t.Email)
	fmt.Fprintf(tw, "status:\t%s\n", t.Status)
	fmt.Fprintf(tw, "plan:\t%s\n", t.LicenseType)
	fmt.Fprintf(tw, "country:\t%s\n", t.Country)
	fmt.Fprintf(tw, "verticals:\t%s\n", strings.Join(t.Verticals, ", "))
	fmt.Fprintf(tw, "auto-dispatch:\t%t (threshold %.2f, reinforcement after %d min)\n",
		t.FeatureFlags.DispatchMode, t.DispatchThreshold, t.ReinforcementTimeoutMin)
	fmt.Fprintf(tw, "sla target uptime:\t%.2f%%\n", t.SLATargetUptimePct)
	fmt.Fprintf(tw, "created:\t%s\n", fmtTime(t.CreatedAt))
	fmt.Fprintf(tw, "updated:\t%s\n", fmtTime(t.UpdatedAt))
	_ = tw.Flush()
}
