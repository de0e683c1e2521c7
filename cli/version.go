package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

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
			v := buildInfo()
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

// buildInfo is the binary's version: what the Makefile stamped, else what the Go
// toolchain recorded (a plain `go build` in a git checkout records the commit and its
// time; `go install …@v1.2.3` the module version).
func buildInfo() versionInfo {
	v := versionInfo{Version: version, Commit: commit, BuildDate: date,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	if v.Commit != "none" {
		return v
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			if v.BuildDate == "unknown" {
				v.BuildDate = s.Value + " (commit time)"
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && v.Commit != "none" {
		v.Commit += "-dirty"
	}
	return v
}
