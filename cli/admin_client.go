package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/fieldrelay/fieldrelay/store"
	"github.com/spf13/cobra"
)

// adminLockTimeout is how long an admin command waits for the store's lock before it
// concludes that another process holds it.
const adminLockTimeout = 300 * time.Millisecond

// adminFlags are the flags every admin command takes.
type adminFlags struct {
	data     string
	database string
	// secretKeyFile is the key file of --database's secrets.
	secretKeyFile string
	json          bool
}

func (f *adminFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.data, "data", "./data", "data directory")
	cmd.Flags().StringVar(&f.database, "database", "", "postgres:// URL of a central tier's database: work on it directly, whether or not processes serve it (--data is then not used)")
	cmd.Flags().StringVar(&f.secretKeyFile, secretKeyFlag, "", "with --database: the key file that opens the database's encrypted secrets (required with --database)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
}

// adminSocket is the admin socket of a data directory.
func adminSocket(dataDir string) string { return filepath.Join(dataDir, server.AdminSocketName) }

// errHeld is the answer when the store is locked and no server answers on the socket.
func errHeld(dataDir string) error {
	return model.Errorf(model.KindUnavailable,
		"the data directory %s is held by another process whose admin socket does not answer", dataDir)
}

// call runs an admin operation on the store that f names and decodes its result into out.
// With --database, on the database directly: the database serializes the writes of every
// process, so no server needs to relay them. Else on the data directory: through its admin
// socket when a server answers there, else on the store opened directly.
func (a *app) call(ctx context.Context, f *adminFlags, op string, args, out any) error {
	if f.database != "" {
		return a.callDatabase(ctx, f.database, f.secretKeyFile, op, args, out)
	}
	dataDir := f.data
	err := server.CallAdmin(ctx, adminSocket(dataDir), op, args, out)
	if !errors.Is(err, server.ErrAdminUnavailable) {
		return err
	}
	err = a.callLocal(ctx, dataDir, op, args, out)
	if errors.Is(err, store.ErrLocked) {
		// A server that has just opened the store may not listen on its socket yet.
		err = server.CallAdmin(ctx, adminSocket(dataDir), op, args, out)
		if errors.Is(err, server.ErrAdminUnavailable) {
			return errHeld(dataDir)
		}
	}
	return err
}

// runAdmin runs an operation on the data directory of f and prints its result: as JSON
// with --json, else through text.
func runAdmin[T any](a *app, cmd *cobra.Command, f *adminFlags, op string, args any, text func(w io.Writer, res *T)) error {
	var res T
	if err := a.call(cmd.Context(), f, op, args, &res); err != nil {
		return err
	}
	if f.json {
		return printJSON(cmd.OutOrStdout(), res)
	}
	text(cmd.OutOrStdout(), &res)
	return nil
}

// callLocal runs an operation on the store, which it opens for the time of the call. It
// returns store.ErrLocked when another process holds the store.
func (a *app) callLocal(ctx context.Context, dataDir, op string, args, out any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	// Only tenant.create may start a data directory: any other operation on a directory
	// without data is a mistyped --data.
	if op != admin.OpTenantCreate {
		if _, err := os.Stat(store.Path(dataDir)); errors.Is(err, fs.ErrNotExist) {
			return model.Errorf(model.KindNotFound, "%s holds no fieldrelay data (no %s)", dataDir, store.FileName)
		}
	}
	db, err := store.Open(dataDir, store.Options{LockTimeout: adminLockTimeout})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return err
		}
		return storeOpenError(dataDir, err)
	}
	defer db.Close()
	return a.runOp(ctx, db, op, raw, out)
}

// callDatabase runs an operation on the store of a --database URL, which it opens (creating
// or migrating its schema) for the time of the call.
func (a *app) callDatabase(ctx context.Context, rawURL, keyFile, op string, args, out any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	db, err := a.openDatabaseURL(ctx, rawURL, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer db.Close()
	return a.runOp(ctx, db, op, raw, out)
}

// runOp runs an admin operation on an open store and decodes its result into out.
func (a *app) runOp(ctx context.Context, db model.Store, op string, raw json.RawMessage, out any) error {
	res, err := admin.Run(ctx, engine.New(db, a.engineOptions), op, raw)
	if err != nil {
		return err
	}
	// The result goes through JSON as it does over the socket, so both print the same.
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// storeOpenError explains why the store of dataDir did not open.
func storeOpenError(dataDir string, err error) error {
	switch {
	case errors.Is(err, store.ErrLocked):
		return model.Errorf(model.KindUnavailable,
			"the data directory %s is in use by another process (is a fieldrelay server already running on it?)", dataDir)
	case errors.Is(err, store.ErrForeign):
		return model.Errorf(model.KindInternal,
			"%s is not a fieldrelay database or it is damaged; restore a backup with `fieldrelay restore`", store.Path(dataDir))
	default:
		return model.Errorf(model.KindInternal, "cannot open the data directory %s: %v", dataDir, err)
	}
}

// adminAnswers reports whether a process answers on the admin socket of dataDir.
func adminAnswers(dataDir string) bool {
	conn, err := net.DialTimeout("unix", adminSocket(dataDir), time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
