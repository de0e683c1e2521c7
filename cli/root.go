// Package cli is the command line of fieldrelay: cobra commands that wire the store, the
// engine and the server together, and the admin commands that run the engine's use cases
// on a data directory, directly or through the admin socket of the server that holds it.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/spf13/cobra"
)

// Build information, stamped by the Makefile with -ldflags "-X …/cli.version=…".
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

// app holds what the commands share instead of globals: where environment variables come
// from, the options of the engines the commands build (tests make hashing cheap), and
// how a --database URL is opened.
type app struct {
	getenv        func(string) (string, bool)
	engineOptions engine.Options
	// openStore opens the store of a --database URL; nil is openDatabase (tests put a
	// store of their own behind it).
	openStore storeOpener
}

// Execute runs the command line with the process's arguments and streams and returns the
// exit code: 0 on success, 1 on any error.
func Execute() int {
	a := &app{getenv: os.LookupEnv}
	return a.execute(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// execute runs one command line and prints its error, if any.
func (a *app) execute(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	root := a.newRootCommand()
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	// A flag error stops cobra before --json is parsed: the raw arguments still say
	// whether the caller reads JSON.
	printError(cmd, err, slices.Contains(args, "--json") || slices.Contains(args, "--json=true"))
	return 1
}

func (a *app) newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "fieldrelay",
		Short: "Offline-first event delivery and team dispatch for field operations",
		Long: "fieldrelay runs a multi-tenant REST node (serve) and administers its data directory.\n\n" +
			"Every flag can also be set with the environment variable FIELDRELAY_<FLAG> (upper case,\n" +
			"dashes as underscores, e.g. FIELDRELAY_DATA); a flag given on the command line wins.",
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnv(cmd.Flags(), a.getenv)
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return model.Errorf(model.KindValidation, "%v", err)
	})
	root.AddCommand(
		a.newServeCommand(),
		a.newTenantCommand(),
		a.newUserCommand(),
		a.newAPIKeyCommand(),
		a.newUpstreamCommand(),
		a.newSMSCommand(),
		a.newDeviceCommand(),
		a.newBackupCommand(),
		a.newRestoreCommand(),
		a.newCheckCommand(),
		a.newCompactCommand(),
		a.newBenchCommand(),
		a.newMigrateCommand(),
		a.newSecretsCommand(),
		newVersionCommand(),
	)
	documentEnv(root)
	return root
}

// runE adapts a command's function: an error that is not already an *engine.Error is
// unexpected, and becomes an internal error that keeps its cause for the operator.
func runE(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		var e *model.Error
		if err != nil && !errors.Is(err, errReported) && !errors.As(err, &e) {
			return model.Internal(err)
		}
		return err
	}
}

// printError prints err as `error: <message>` on stderr, or, when the command was asked
// for JSON, as {"error": kind, "message": …} on stdout. Errors that cobra itself raises
// (an unknown command, a wrong argument count) are usage errors: validation_error.
func printError(cmd *cobra.Command, err error, jsonAsked bool) {
	if errors.Is(err, errReported) {
		return
	}
	var e *model.Error
	desc := &server.AdminError{Kind: model.KindValidation, Message: err.Error()}
	if errors.As(err, &e) {
		desc = server.AdminErrorOf(err)
	}
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON || jsonAsked {
		out := map[string]string{"error": string(desc.Kind), "message": desc.Message}
		if desc.Field != "" {
			out["field"] = desc.Field
		}
		_ = printJSON(cmd.OutOrStdout(), out)
		return
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "error: %s\n", desc.Message)
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// exactArgs is cobra.ExactArgs with a usage error that shows the command's usage line.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return model.Errorf(model.KindValidation, "usage: %s", cmd.UseLine())
		}
		return nil
	}
}
