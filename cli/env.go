package cli

import (
	"fmt"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envPrefix starts the environment variable of every flag.
const envPrefix = "FIELDRELAY_"

// envName is the environment variable read for a flag: --tls-cert is FIELDRELAY_TLS_CERT.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every flag that was not given on the command line from its environment
// variable, when that is set and not empty: flags win over the environment.
func applyEnv(fs *pflag.FlagSet, getenv func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" || err != nil {
			return
		}
		v, ok := getenv(envName(f.Name))
		if !ok || v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = model.Invalid(f.Name, "%s: %v", envName(f.Name), e)
			return
		}
		// Set marks the flag changed, as the command line does: the annotation tells them apart.
		_ = fs.SetAnnotation(f.Name, fromEnvAnnotation, []string{envName(f.Name)})
	})
	return err
}

// fromEnvAnnotation marks a flag that applyEnv set from its environment variable.
const fromEnvAnnotation = "fieldrelay_from_env"

// givenOnCommandLine reports whether the flag name was given on the command line (and not
// by its environment variable).
func givenOnCommandLine(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed && len(f.Annotations[fromEnvAnnotation]) == 0
}

// documentEnv adds each flag's environment variable to its help text.
func documentEnv(cmd *cobra.Command) {
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !strings.Contains(f.Usage, envPrefix) {
			f.Usage += fmt.Sprintf(" [$%s]", envName(f.Name))
		}
	})
	for _, c := range cmd.Commands() {
		documentEnv(c)
	}
}
