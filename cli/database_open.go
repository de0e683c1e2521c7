package cli

import (
	"context"
	"log/slog"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// openDatabase opens the store of a postgres:// URL.
func openDatabase(_ context.Context, _ string, _ *slog.Logger) (model.Store, error) {
	return nil, model.Errorf(model.KindUnavailable, "this build of fieldrelay has no PostgreSQL store yet")
}
