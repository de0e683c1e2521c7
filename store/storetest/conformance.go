package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
)

// Conformance runs the contract of model.Store and model.Tx (engine/model/ports*.go) on a
// store: every store of fieldrelay passes it, so that the engine may rely on what the ports
// document and on nothing else (docs/architecture.md). Each subtest calls open for a
// fresh, empty store, which open closes at the end of the test (whether or not the test
// closed it already: closing twice must be harmless).
//
// The suite speaks model only: records are built with ids and timestamps that agree (a
// UUIDv7 taken at the record's time), as the engine builds them, so that "newest first"
// means the same thing for a store that orders by id and one that orders by time.
func Conformance(t *testing.T, open func(t *testing.T) model.Store) {
	for _, area := range []struct {
		name string
		run  func(t *testing.T, open Opener)
	}{
		{"Store", testStore},
		{"Meta", testMeta},
		{"Tenants", testTenants},
		{"Users", testUsers},
		{"LoginGuard", testLoginGuard},
		{"APIKeys", testAPIKeys},
		{"AuthTokens", testAuthTokens},
		{"Idempotency", testIdempotency},
		{"Zones", testZones},
		{"Teams", testTeams},
		{"Webhooks", testWebhooks},
		{"Events", testEvents},
		{"OpenEvents", testOpenEvents},
		{"EventSearch", testEventSearch},
		{"Alerts", testAlerts},
		{"Missions", testMissions},
		{"MissionCodes", testMissionCodes},
		{"SMSInbound", testSMSInbound},
		{"SMSOutbound", testSMSOutbound},
		{"SMSSentTo", testSMSSentTo},
		{"PageBytes", testPageBytes},
		{"Outbox", testOutbox},
		{"Devices", testDevices},
		{"SyncBatches", testSyncBatches},
		{"Retention", testRetention},
		{"Usage", testUsage},
		{"Upstream", testUpstream},
		{"Downstream", testDownstream},
		{"DispatchRequests", testDispatchRequests},
		{"Backfill", testBackfill},
		{"UnknownTenant", testUnknownTenant},
	} {
		t.Run(area.name, func(t *testing.T) { area.run(t, open) })
	}
}

// Opener opens a fresh, empty store for a test.
type Opener = func(t *testing.T) model.Store

// start is the time the records of the suite are dated from.
var start = modeltest.Epoch

// fx is one subtest's store with the helpers that use it.
type fx struct {
	t *testing.T
	s model.Store
}

func newFx(t *testing.T, open Opener) *fx {
	t.Helper()
	return &fx{t: t, s: open(t)}
}

// update runs fn in a read-write transaction and fails the test on error.
func (f *fx) update(fn func(model.Tx) error) {
	f.t.Helper()
	if err := f.s.Update(context.Background(), fn); err != nil {
		f.t.Fatalf("update: %v", err)
	}
}

// view runs fn in a read-only transaction and fails the test on error.
func (f *fx) view(fn func(model.Tx) error) {
	f.t.Helper()
	if err := f.s.View(context.Background(), fn); err != nil {
		f.t.Fatalf("view: %v", err)
	}
}

// updateErr runs fn in a read-write transaction and returns its error.
func (f *fx) updateErr(fn func(model.Tx) error) error {
	return f.s.Update(context.Background(), fn)
}

// viewErr runs fn in a read-only transaction and returns its error.
func (f *fx) viewErr(fn func(model.Tx) error) error {
	return f.s.View(context.Background(), fn)
}

// tenant stores a new tenant with the given slug.
func (f *fx) tenant(slug string) *model.Tenant {
	f.t.Helper()
	tn := newTenant(slug)
	f.update(func(tx model.Tx) error { return tx.PutTenant(tn) })
	return tn
}

func newTenant(slug string) *model.Tenant {
	return &model.Tenant{ID: model.NewID(), Name: "Tenant " + slug, Slug: slug, Email: "ops@" + slug + ".example",
		LicenseType: "starter", Status: "active", Country: "FR", Verticals: model.StandardVerticals,
		DispatchThreshold: 0.2, SLATargetUptimePct: 99.9, CreatedAt: model.At(start), UpdatedAt: model.At(start)}
}

// newUser returns a user account of a tenant, not yet stored.
func newUser(tenantID, email string) *model.UserAccount {
	return &model.UserAccount{User: model.User{ID: model.NewID(), TenantID: tenantID, Email: email,
		Name: "User " + email, RBACLevel: model.RoleAPIUser, Status: "active"}, TokenVersion: 1}
}

// user stores a new user.
func (f *fx) user(tenantID, email string) *model.UserAccount {
	f.t.Helper()
	u := newUser(tenantID, email)
	f.update(func(tx model.Tx) error { return tx.PutUserAccount(u) })
	return u
}

// assertKind fails unless err is a *model.Error of the given kind.
func assertKind(tb testing.TB, err error, kind model.Kind) *model.Error {
	tb.Helper()
	return modeltest.AssertKind(tb, err, kind)
}

// at returns the suite's start plus i seconds.
func at(i int) time.Time { return start.Add(time.Duration(i) * time.Second) }

// ids joins the ids that id returns for each of items.
func ids[T any](items []T, id func(T) string) string {
	var s []string
	for _, it := range items {
		s = append(s, id(it))
	}
	return strings.Join(s, ",")
}

// walk reads every page of a list with the given page shape, and returns the items in
// order and the number of items of each page. It fails the test when the list does not end
// within max pages.
func walk[T any](tb testing.TB, f *fx, p model.Page, max int, list func(tx model.Tx, p model.Page) ([]T, string, error)) ([]T, []int) {
	tb.Helper()
	var all []T
	var sizes []int
	for range max {
		var items []T
		var next string
		f.view(func(tx model.Tx) (err error) {
			items, next, err = list(tx, p)
			return err
		})
		all = append(all, items...)
		sizes = append(sizes, len(items))
		if next == "" {
			return all, sizes
		}
		if next == p.Cursor {
			tb.Fatalf("a page returned its own cursor %q", next)
		}
		p.Cursor = next
	}
	tb.Fatalf("the list did not end within %d pages (sizes %v)", max, sizes)
	return nil, nil
}

// sizesOf formats page sizes for a comparison.
func sizesOf(sizes []int) string { return fmt.Sprint(sizes) }
