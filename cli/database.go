package cli

import (
	"context"
	"errors"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"log/slog"
	"net/url"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The central tier keeps its records in a database that several processes share
// (docs/operations.md, "The central tier on PostgreSQL";
// docs/decisions/0094-central-tier-database.md): `serve --database URL` and every
// admin command with --database open the store that the URL names instead of the bbolt file
// of --data. The URL may hold a password: it is only ever shown through redactURL.

// databaseSchemes are the URL schemes that --database accepts.
var databaseSchemes = []string{"postgres", "postgresql"}

// storeOpener opens the store of a --database URL (already checked by checkDatabaseURL).
// log receives the store's own messages. The default is openDatabase; tests substitute one.
type storeOpener func(ctx context.Context, url string, key *postgres.SecretKey, log *slog.Logger) (model.Store, error)

// checkDatabaseURL refuses a --database value that is not a postgres:// or postgresql://
// URL with a host or a socket directory. Its message never repeats the value, which may
// hold a password (a key=value connection string, say).
func checkDatabaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !isDatabaseScheme(u.Scheme) {
		return model.Invalid("database", "--database must be a postgres:// or postgresql:// URL, such as postgres://fieldrelay@db.example:5432/fieldrelay")
	}
	return nil
}

func isDatabaseScheme(s string) bool {
	for _, d := range databaseSchemes {
		if strings.EqualFold(s, d) {
			return true
		}
	}
	return false
}

// redactURL is a database URL as it may be printed and logged: its password, in the user
// information or in a password query parameter, replaced by xxxxx. A value that does not
// parse is not shown at all.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a database URL that does not parse)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// scrubURL removes from a message every secret that raw holds (the whole URL, its password
// and the value of its password parameter), so that an error of the database driver that
// quotes them prints as redactURL would.
func scrubURL(msg, raw string) string {
	msg = strings.ReplaceAll(msg, raw, redactURL(raw))
	u, err := url.Parse(raw)
	if err != nil {
		return msg
	}
	var secrets []string
	if pw, ok := u.User.Password(); ok && pw != "" {
		secrets = append(secrets, pw, url.PathEscape(pw), url.QueryEscape(pw))
	}
	if pw := u.Query().Get("password"); pw != "" {
		secrets = append(secrets, pw, url.QueryEscape(pw))
	}
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	return msg
}

// databaseOpenError explains why the store of a --database URL did not open, without its
// secrets. An error of the store keeps its kind (a schema newer than the binary, say); any
// other (the server refused the connection, the password was wrong) is unavailable.
func databaseOpenError(raw string, err error) error {
	kind, msg := model.KindUnavailable, err.Error()
	var e *model.Error
	if errors.As(err, &e) {
		kind, msg = e.Kind, e.Msg
		if e.Err != nil {
			msg += ": " + e.Err.Error()
		}
	}
	return model.Errorf(kind, "cannot open the database %s: %s", redactURL(raw), scrubURL(msg, raw))
}

// openDatabaseURL checks a --database URL and opens its store with open (nil:
// openDatabase). Its errors never hold the URL's password.
func openDatabaseURL(ctx context.Context, open storeOpener, raw string, key *postgres.SecretKey, log *slog.Logger) (model.Store, error) {
	if err := checkDatabaseURL(raw); err != nil {
		return nil, err
	}
	if open == nil {
		open = openDatabase
	}
	db, err := open(ctx, raw, key, log)
	if err != nil {
		return nil, databaseOpenError(raw, err)
	}
	return db, nil
}

// openDatabaseURL opens the store of a --database URL for an admin command, with the key
// of keyFile (--secret-key-file, required).
func (a *app) openDatabaseURL(ctx context.Context, raw, keyFile string, log *slog.Logger) (model.Store, error) {
	key, err := readSecretKey(keyFile)
	if err != nil {
		return nil, err
	}
	return openDatabaseURL(ctx, a.openStore, raw, key, log)
}

// errDatabaseBackup refuses backup and restore on a --database: a PostgreSQL database is
// saved and restored with its own tools (docs/decisions/0095-database-refuses-backup.md).
func errDatabaseBackup(cmd string) error {
	return model.Invalid("database", "`fieldrelay %s` copies the bbolt file of --data; a --database is backed up and restored with "+
		"PostgreSQL's own tools: pg_dump --format=custom and pg_restore (a logical copy), or pg_basebackup with WAL archiving "+
		"(point-in-time recovery); see docs/operations.md", cmd)
}

// errDatabaseCheck refuses check on a --database
// (docs/decisions/0095-database-refuses-backup.md).
var errDatabaseCheck = model.Invalid("database", "`fieldrelay check` checks bbolt's pages and the indexes that fieldrelay keeps by hand in it; "+
	"on PostgreSQL the database keeps its indexes and constraints itself: check its tables and indexes with pg_amcheck "+
	"(e.g. pg_amcheck --heapallindexed DBNAME)")
