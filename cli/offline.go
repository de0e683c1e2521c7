package cli

import (
	"errors"
	"os"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// The offline commands (check, compact) work on a data directory's database while no
// server serves it; doing names what they do in their errors ("checking").

// offlineDatabase refuses a data directory that a server serves or that holds no database.
func offlineDatabase(dataDir, doing string) error {
	if adminAnswers(dataDir) {
		return model.Errorf(model.KindUnavailable,
			"a fieldrelay server is running on %s: stop it before %s", dataDir, doing)
	}
	if _, err := os.Stat(store.Path(dataDir)); err != nil {
		return model.Invalid("data", "%s holds no fieldrelay database", dataDir)
	}
	return nil
}

// offlineOpenError explains why the database of a data directory could not be opened.
func offlineOpenError(err error, dataDir, doing string) error {
	switch {
	case errors.Is(err, store.ErrLocked):
		return model.Errorf(model.KindUnavailable,
			"the data directory %s is held by another process (a running server?): stop it before %s", dataDir, doing)
	case errors.Is(err, store.ErrForeign):
		return model.Invalid("data", "%s", err)
	}
	return err
}
