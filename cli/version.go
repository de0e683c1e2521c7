package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// versionInfo is what `fieldrelay version --json` prints.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"build_date"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

func newVersionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:          "version",
		Short:        "Print the version, commit, build date and Go version",
		Example:      "  fieldrelay version\n  fieldrelay version --json",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			v := versionInfo{Version: version, Commit: commit, BuildDate: date,
				GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), v)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "fieldrelay %s\ncommit:     %s\nbuilt:      %s\ngo:         %s %s\n",
				v.Version, v.Commit, v.BuildDate, v.GoVersion, v.Platform)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
