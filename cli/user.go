package cli

import (
	"bufio"
	"fmt"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"io"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/spf13/cobra"
)

func (a *app) newUserCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Create users, suspend, activate and unlock them, issue password reset tokens",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(
		a.newUserCreateCommand(),
		a.newUserEmailCommand("suspend", "Suspend a user and end its sessions at once", admin.OpUserSuspend, "Suspended"),
		a.newUserEmailCommand("activate", "Activate a suspended user and end its sessions at once", admin.OpUserActivate, "Activated"),
		a.newUserEmailCommand("unlock", "Lift the login lock of a user", admin.OpUserUnlock, "Unlocked"),
		a.newUserResetLinkCommand(),
	)
	return cmd
}

func (a *app) newUserCreateCommand() *cobra.Command {
	var f adminFlags
	var in admin.UserCreateArgs
	var fromStdin bool
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an active user in a tenant",
		Long: "Create an active user in a tenant. Prefer --password-stdin: a --password is visible to\n" +
			"other users of the machine in the process list.",
		Example: `  printf '%s\n' "$PASSWORD" | fieldrelay user create --tenant acme --email ana@acme.example --name "Ana Lima" --role company_admin --password-stdin
  fieldrelay user create --tenant acme --email op@acme.example --name "Op One" --role field_operator --password 'correct horse battery' --json`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			switch {
			case fromStdin && in.Password != "":
				return model.Invalid("password", "give either --password-stdin or --password, not both")
			case fromStdin:
				pw, err := readPassword(cmd.InOrStdin())
				if err != nil {
					return model.Invalid("password", "reading the password from stdin: %v", err)
				}
				in.Password = pw
			case in.Password == "":
				return model.Invalid("password", "--password-stdin or --password is required")
			}
			return runAdmin(a, cmd, &f, admin.OpUserCreate, in, func(w io.Writer, res *admin.UserResult) {
				u := res.User
				fmt.Fprintf(w, "Created user %s (%s, role %s, id %s) in tenant %s.\n", u.Email, u.Name, u.RBACLevel, u.ID, in.Tenant)
			})
		}),
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&in.Tenant, "tenant", "", "slug of the user's tenant (required)")
	fl.StringVar(&in.Email, "email", "", "login email, unique in the installation (required)")
	fl.StringVar(&in.Name, "name", "", "display name (required)")
	fl.StringVar(&in.Role, "role", "", "role: "+strings.Join(model.Roles, ", ")+" (required)")
	fl.StringVar(&in.Password, "password", "", "password (at least 10 characters)")
	fl.BoolVar(&fromStdin, "password-stdin", false, "read the password from the first line of stdin")
	return cmd
}

// readPassword reads the first line of r, without its line ending.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// newUserEmailCommand makes the commands that take an email and print the user: suspend,
// activate and unlock.
func (a *app) newUserEmailCommand(use, short, op, done string) *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:          use + " EMAIL",
		Short:        short,
		Example:      fmt.Sprintf("  fieldrelay user %s ana@acme.example", use),
		Args:         exactArgs(1),
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return runAdmin(a, cmd, &f, op, admin.EmailArgs{Email: args[0]}, func(w io.Writer, res *admin.UserResult) {
				u := res.User
				fmt.Fprintf(w, "%s user %s (%s, role %s); status %s.\n", done, u.Email, u.Name, u.RBACLevel, u.Status)
			})
		}),
	}
	f.register(cmd)
	return cmd
}

func (a *app) newUserResetLinkCommand() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "reset-link EMAIL",
		Short: "Issue a single-use password reset token (valid 1 hour)",
		Long: "Issue a single-use password reset token, valid for one hour. The user sets a new password\n" +
			"with POST /v1/auth/reset-password {\"token\": …, \"new_password\": …}; a reset also lifts a login lock.",
		Example:      "  fieldrelay user reset-link ana@acme.example",
		Args:         exactArgs(1),
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return runAdmin(a, cmd, &f, admin.OpUserResetLink, admin.EmailArgs{Email: args[0]}, func(w io.Writer, res *model.IssuedToken) {
				fmt.Fprintf(w, "Password reset token for %s (single use, valid until %s):\n%s\n", res.Email, fmtTime(res.ExpiresAt), res.Token)
				fmt.Fprintf(w, "Use it with POST /v1/auth/reset-password {\"token\": \"%s\", \"new_password\": \"…\"}.\n", res.Token)
			})
		}),
	}
	f.register(cmd)
	return cmd
}

// fmtTime formats a timestamp as the API does.
func fmtTime(t model.Time) string { return t.UTC().Format(model.TimeLayout) }
