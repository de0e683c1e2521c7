package cli

import (
	"fmt"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"io"
	"os"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/spf13/cobra"
)

func (a *app) newUpstreamCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "upstream",
		Short: "Set, show, pause and resume a tenant's upstream sync",
		Long: "A tenant's records (events, dispatches, mission moves) are pushed to an upstream fieldrelay node,\n" +
			"as a device of a tenant there, with an API key of that tenant (devices:manage and devices:sync).\n" +
			"The key is stored encrypted with the node's secret and never shown again.",
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.newUpstreamSetCommand(), a.newUpstreamShowCommand(),
		a.newUpstreamPauseCommand(admin.OpUpstreamPause, "pause", "Stop pushing (the change log keeps being written)"),
		a.newUpstreamPauseCommand(admin.OpUpstreamResume, "resume", "Push again, at once"))
	return cmd
}

func (a *app) newUpstreamSetCommand() *cobra.Command {
	var f adminFlags
	var in admin.UpstreamSetArgs
	var caFile string
	var paused bool
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Set a tenant's upstream: its URL and an API key of the upstream tenant",
		Long: "Set a tenant's upstream. The URL is https (http only to a loopback host, e.g. a TLS proxy on this\n" +
			"machine). --api-key may be left out when the URL stays the same (the stored key is kept).\n" +
			"--ca adds a root certificate (PEM) trusted for this upstream only.",
		Example: `  fieldrelay upstream set --tenant acme --url https://central.example.org --api-key fr_live_…
  fieldrelay upstream set --tenant acme --url https://10.0.0.5:8443 --api-key fr_live_… --ca central-ca.pem`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if caFile != "" {
				pem, err := os.ReadFile(caFile)
				if err != nil {
					return model.Invalid("ca", "--ca: %v", err)
				}
				s := string(pem)
				in.CAPEM = &s
			}
			if in.APIKey == "-" {
				// Read from stdin, so that the key shows in no process list.
				key, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 4096))
				if err != nil {
					return model.Invalid("api-key", "--api-key -: %v", err)
				}
				in.APIKey = strings.TrimSpace(string(key))
			}
			if cmd.Flags().Changed("paused") {
				in.Paused = &paused
			}
			return runAdmin(a, cmd, &f, admin.OpUpstreamSet, in, printUpstream)
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&in.Tenant, "tenant", "", "slug of the tenant (required)")
	cmd.Flags().StringVar(&in.URL, "url", "", "base URL of the upstream node (required)")
	cmd.Flags().StringVar(&in.APIKey, "api-key", "", "API key of the upstream tenant, or - to read it from stdin (required unless the URL is unchanged)")
	cmd.Flags().StringVar(&caFile, "ca", "", "PEM file of a root certificate to trust for this upstream")
	cmd.Flags().BoolVar(&paused, "paused", false, "store the settings paused")
	return cmd
}

func (a *app) newUpstreamShowCommand() *cobra.Command {
	var f adminFlags
	var in admin.APIKeyListArgs
	cmd := &cobra.Command{
		Use:          "show",
		Short:        "Show a tenant's upstream settings (the key's prefix only) and the link's state",
		Example:      "  fieldrelay upstream show --tenant acme",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return runAdmin(a, cmd, &f, admin.OpUpstreamShow, in, printUpstream)
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&in.Tenant, "tenant", "", "slug of the tenant (required)")
	return cmd
}

func (a *app) newUpstreamPauseCommand(op, use, short string) *cobra.Command {
	var f adminFlags
	var in admin.APIKeyListArgs
	cmd := &cobra.Command{
		Use:          use,
		Short:        short,
		Example:      "  fieldrelay upstream " + use + " --tenant acme",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return runAdmin(a, cmd, &f, op, in, printUpstream)
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&in.Tenant, "tenant", "", "slug of the tenant (required)")
	return cmd
}

// kindNames name the kinds of a backfill's walk.
var kindNames = map[string]string{model.ChangeEvent: "events", model.ChangeDispatch: "dispatches",
	model.ChangeMission: "missions"}

func printUpstream(w io.Writer, r *admin.UpstreamResult) {
	if r.Upstream == nil {
		fmt.Fprintln(w, "No upstream is configured.")
		return
	}
	u, st := r.Upstream, r.Status
	fmt.Fprintf(w, "Upstream:   %s\n", u.URL)
	fmt.Fprintf(w, "API key:    %s\n", u.APIKeyPrefix)
	if u.CAPEM != nil {
		fmt.Fprintln(w, "CA:         a root certificate of its own")
	}
	fmt.Fprintf(w, "Node id:    %s\n", u.NodeID)
	fmt.Fprintf(w, "Device:     %s\n", strOr(u.DeviceID, "not registered yet"))
	fmt.Fprintf(w, "State:      %s\n", st.State)
	fmt.Fprintf(w, "Backlog:    %d change(s)", st.Backlog)
	if st.BacklogOldestAt != nil {
		fmt.Fprintf(w, ", oldest %s", fmtTime(*st.BacklogOldestAt))
	}
	fmt.Fprintln(w)
	if b := st.Backfill; b != nil {
		switch b.State {
		case model.BackfillWalking:
			fmt.Fprintf(w, "History:    %d record(s) in the log so far, walking the %s\n", b.Queued, kindNames[strOr(b.Kind, "")])
		case model.BackfillSending:
			fmt.Fprintf(w, "History:    %d record(s) in the log, sent through change %d\n", b.Queued, b.Through)
		default:
			fmt.Fprintf(w, "History:    %d record(s) sent\n", b.Queued)
		}
	}
	fmt.Fprintf(w, "Last success: %s\n", fmtTimePtr(st.LastSuccessAt, "never"))
	if st.LastError != nil {
		fmt.Fprintf(w, "Last error: %s\n", *st.LastError)
		fmt.Fprintf(w, "Next try:   %s\n", fmtTimePtr(st.NextAttemptAt, "now"))
	}
	if st.Rejected > 0 {
		fmt.Fprintf(w, "Rejected upstream: %d (last: %s)\n", st.Rejected, strOr(st.LastRejection, ""))
	}
	if d := st.Downstream; d != nil {
		fmt.Fprintf(w, "Downstream: cursor %d of %d (%d behind", d.Cursor, d.End, d.Behind)
		if d.Lagging {
			fmt.Fprint(w, ", lagging")
		}
		fmt.Fprintf(w, "), last pull %s, newest central change applied %s\n", fmtTimePtr(d.LastPullAt, "never"),
			fmtTimePtr(d.NewestAt, "none"))
		fmt.Fprintf(w, "            caught up %s\n", fmtTimePtr(d.CaughtUpAt, "never"))
		if d.Snapshots > 0 || d.Skipped > 0 {
			fmt.Fprintf(w, "            %d snapshot(s), %d central record(s) skipped", d.Snapshots, d.Skipped)
			if d.LastSkip != nil {
				fmt.Fprintf(w, " (last: %s)", *d.LastSkip)
			}
			fmt.Fprintln(w)
		}
	}
}

func strOr(s *string, none string) string {
	if s == nil {
		return none
	}
	return *s
}
