package engine_test

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
	"github.com/fieldrelay/fieldrelay/engine/password"
	"github.com/fieldrelay/fieldrelay/store"
	"github.com/fieldrelay/fieldrelay/store/storetest"
)

// testPassword is a valid password for test users.
const testPassword = "correct horse battery"

// The shared test helpers (engine/model/modeltest, store/storetest) under the short names
// the engine tests use.
var (
	epoch         = modeltest.Epoch
	MustOpenDB    = storetest.MustOpenDB
	mustOpenDir   = storetest.MustOpenDir
	AssertKind    = modeltest.AssertKind
	AssertInvalid = modeltest.AssertInvalid
	square        = modeltest.Square
	polygon       = modeltest.Polygon
)

// cheapPasswords keeps argon2id fast in tests.
var cheapPasswords = password.Params{Time: 1, Memory: 64, Threads: 1}

// reopen closes old (when there is one) and opens the store of dir with a fresh engine
// over it, its schedule loaded: a restart of the node. opt's Password and Logger default
// to cheap hashing and no log.
func reopen(tb testing.TB, dir string, old interface{ Close() error }, opt engine.Options) (*store.DB, *engine.Engine) {
	tb.Helper()
	if old != nil {
		if err := old.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	db := mustOpenDir(tb, dir)
	if opt.Password == (password.Params{}) {
		opt.Password = cheapPasswords
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	e := engine.New(db, opt)
	if err := e.LoadSchedule(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return db, e
}

// MustOpenEngine returns an engine over a fresh store, with a fake clock set to epoch.
func MustOpenEngine(tb testing.TB) (*engine.Engine, *model.FakeClock) {
	tb.Helper()
	clock := model.NewFakeClock(epoch)
	e := engine.New(MustOpenDB(tb), engine.Options{Clock: clock, Password: cheapPasswords,
		Logger: slog.New(slog.DiscardHandler)})
	return e, clock
}

// MustUpdate runs fn in a read-write transaction and fails the test on error.
func MustUpdate(tb testing.TB, e *engine.Engine, fn func(model.Tx) error) {
	tb.Helper()
	if err := e.Update(context.Background(), fn); err != nil {
		tb.Fatalf("update: %v", err)
	}
}

// MustCreateTenant creates a tenant with the given slug and default settings.
func MustCreateTenant(tb testing.TB, e *engine.Engine, slug string) *model.CreatedTenant {
	tb.Helper()
	var out *model.CreatedTenant
	mustDo(tb, func() (err error) {
		out, err = e.AdminCreateTenant(context.Background(), model.CreateTenantInput{
			Name: "Tenant " + slug, Slug: slug, Email: "ops@" + slug + ".example", Country: "FR"})
		return err
	})
	return out
}

// MustCreateUser creates an active user with testPassword in the tenant with the given slug.
func MustCreateUser(tb testing.TB, e *engine.Engine, slug, email string, role model.Role) *model.User {
	tb.Helper()
	var out *model.User
	mustDo(tb, func() (err error) {
		out, err = e.AdminCreateUser(context.Background(), slug, model.CreateUserInput{
			Email: email, Name: "User " + email, Role: role, Password: testPassword})
		return err
	})
	return out
}

// MustUserAccount reads a user account as stored.
func MustUserAccount(tb testing.TB, e *engine.Engine, tenantID, id string) *model.UserAccount {
	tb.Helper()
	var u *model.UserAccount
	err := e.View(context.Background(), func(tx model.Tx) (err error) {
		u, err = tx.UserAccount(tenantID, id)
		return err
	})
	if err != nil {
		tb.Fatalf("reading user %s: %v", id, err)
	}
	return u
}

// adminOf returns a company_admin user principal of a tenant.
func adminOf(t *model.Tenant, userID string) model.Principal {
	return model.Principal{TenantID: t.ID, Plan: t.LicenseType, TenantActive: true,
		UserID: userID, Role: model.RoleCompanyAdmin}
}

func ptr[T any](v T) *T { return &v }

// tenantAdmin is a company administrator of the tenant, for seeding it through the use
// cases that take a principal.
func tenantAdmin(tenantID string) model.Principal {
	return model.Principal{TenantID: tenantID, TenantActive: true, Role: model.RoleCompanyAdmin}
}

// mustDo runs fn, one or more use cases each in its own transaction, and fails the test on
// error.
func mustDo(tb testing.TB, fn func() error) {
	tb.Helper()
	if err := fn(); err != nil {
		tb.Fatalf("update: %v", err)
	}
}

// sorted returns a sorted copy of s.
func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func near(a, b, eps float64) bool { return math.Abs(a-b) <= eps }
