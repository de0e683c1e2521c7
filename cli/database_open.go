package cli

import (
	"context"
	"log/slog"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
)

// openDatabase opens the PostgreSQL store of a postgres:// or postgresql:// URL, creating
// or migrating its schema (store/postgres: under an advisory lock, so that processes
// starting together do not race; a schema newer than this binary is refused). The pool
// has pgxpool's default size unless the URL sets pool_max_conns (docs/operations.md).
func openDatabase(ctx context.Context, url string, log *slog.Logger) (model.Store, error) {
	return openDatabaseListen(ctx, url, "", log)
}

// openDatabaseListen is openDatabase with the listener of notifications on listenURL ("":
// url), for a url through a pooler in transaction mode (docs/operations.md).
func openDatabaseListen(ctx context.Context, url, listenURL string, log *slog.Logger) (model.Store, error) {
	db, err := postgres.Open(ctx, url, postgres.Options{Log: log, ListenURL: listenURL})
	if err != nil {
		return nil, err
	}
	return db, nil
}
