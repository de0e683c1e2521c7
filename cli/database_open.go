package cli

import (
	"context"
	"errors"
	"log/slog"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
)

// openDatabase opens the PostgreSQL store of a postgres:// or postgresql:// URL, creating
// or migrating its schema (store/postgres: under an advisory lock, so that processes
// starting together do not race; a schema newer than this binary is refused), with the
// key that opens the data key of its secrets. The pool has pgxpool's default size unless
// the URL sets pool_max_conns (docs/operations.md).
func openDatabase(ctx context.Context, url string, key *postgres.SecretKey, log *slog.Logger) (model.Store, error) {
	return openDatabaseListen(ctx, url, "", key, log)
}

// openDatabaseListen is openDatabase with the listener of notifications on listenURL ("":
// url), for a url through a pooler in transaction mode (docs/operations.md).
func openDatabaseListen(ctx context.Context, url, listenURL string, key *postgres.SecretKey, log *slog.Logger) (model.Store, error) {
	db, err := postgres.Open(ctx, url, postgres.Options{Log: log, ListenURL: listenURL, SecretKey: key})
	if err != nil {
		return nil, secretKeyError(err)
	}
	return db, nil
}

// secretKeyFlag is the flag of the key file of a --database's secrets
// (docs/decisions/0224-secrets-encrypted-at-rest.md).
const secretKeyFlag = "secret-key-file"

// errNoSecretKey refuses a --database without --secret-key-file.
var errNoSecretKey = model.Invalid(secretKeyFlag, "--secret-key-file FILE is required with --database: the key that encrypts the "+
	"database's secrets, never stored in it (or $%s; `fieldrelay secrets keygen FILE` writes a new one)", envName(secretKeyFlag))

// readSecretKey reads the key file of a --database (errNoSecretKey without one).
func readSecretKey(path string) (*postgres.SecretKey, error) {
	if path == "" {
		return nil, errNoSecretKey
	}
	k, err := postgres.ReadSecretKeyFile(path)
	if err != nil {
		return nil, model.Invalid(secretKeyFlag, "--secret-key-file: %v", err)
	}
	return k, nil
}

// secretKeyError names the flag in the refusal of a key that does not open the database's
// data key: it is not waited on.
func secretKeyError(err error) error {
	var mismatch *postgres.SecretKeyMismatchError
	if errors.As(err, &mismatch) {
		return model.Invalid(secretKeyFlag, "--secret-key-file: %v (a database refuses every other key; after `fieldrelay secrets rotate`, "+
			"give the new key file)", err)
	}
	return err
}
