package cli

import (
	"context"
	"encoding/json"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// testEngine opens the store of data with an engine on a fake clock.
func testEngine(t *testing.T, data string) (*store.DB, *engine.Engine, *model.FakeClock) {
	t.Helper()
	db, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	clock := model.NewFakeClock(time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC))
	return db, engine.New(db, engine.Options{Password: cheapPasswords, Clock: clock, Logger: slog.New(slog.DiscardHandler)}), clock
}

// keyPrincipal is a principal holding every key scope of a tenant.
func keyPrincipal(tenantID string) model.Principal {
	return model.Principal{TenantID: tenantID, TenantActive: true, KeyID: model.NewID(), Scopes: model.KeyScopes()}
}

func renderReply(v any) (model.Reply, error) {
	b, err := json.Marshal(v)
	return model.Reply{Status: 201, Body: b}, err
}

func ingest(ctx context.Context, eng *engine.Engine, p model.Principal, key string) error {
	_, err := eng.IngestEvent(ctx, p, model.EventInput{Type: "ALARM", Priority: "high", Vertical: "emergency",
		IdempotencyKey: key}, renderReply)
	return err
}

func TestScheduledBackups(t *testing.T) {
	data := t.TempDir()
	_, eng, clock := testEngine(t, data)
	var ct *model.CreatedTenant
	if err := func() (err error) {
		ct, err = eng.AdminCreateTenant(context.Background(), model.CreateTenantInput{Name: "Acme", Slug: "acme", Email: "ops@acme.example", Country: "FR"})
		return err
	}(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(data, backupDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "notes.txt") // not a scheduled snapshot: left alone
	if err := os.WriteFile(other, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	type taken struct {
		res *admin.BackupResult
		err error
	}
	got := make(chan taken, 1)
	b := &backupSchedule{eng: eng, dir: dir, keep: 2, log: slog.New(slog.DiscardHandler),
		taken: func(r *admin.BackupResult, err error) { got <- taken{r, err} }}
	ctx, cancel := context.WithCancel(context.Background())
	ticks := make(chan time.Time)
	done := make(chan struct{})
	go func() { defer close(done); b.run(ctx, ticks) }()
	var names []string
	for i := range 3 {
		clock.Advance(6 * time.Hour)
		if err := ingest(context.Background(), eng, keyPrincipal(ct.Tenant.ID), "k"+itoa(i)); err != nil {
			t.Fatal(err)
		}
		ticks <- clock.Now()
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		names = append(names, filepath.Base(r.res.Path))
		if err := checkSnapshot(r.res.Path); err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
	}
	cancel()
	<-done
	if names[0] != "fieldrelay-20260609T160000.000Z.db" {
		t.Fatalf("name %q", names[0])
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{names[1], names[2], "notes.txt"}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	// The newest snapshot holds the three events.
	restored := filepath.Join(t.TempDir(), "r")
	if _, err := restore(restored, filepath.Join(dir, names[2])); err != nil {
		t.Fatal(err)
	}
	if n := countEvents(t, restored, ct.Tenant.ID); n != 3 {
		t.Fatalf("restored %d events, want 3", n)
	}

	t.Run("ErrNoRoom", func(t *testing.T) {
		// A snapshot that would leave less than minFree on the disk is skipped.
		db, err := store.Open(t.TempDir(), store.Options{Space: store.SpaceOptions{
			Probe: func(string) (int64, error) { return 1 << 20, nil }}})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		e := engine.New(db, engine.Options{Password: cheapPasswords, Logger: slog.New(slog.DiscardHandler)})
		dir := filepath.Join(t.TempDir(), "backups")
		low := &backupSchedule{eng: e, dir: dir, keep: 2, minFree: 64 << 20, log: slog.New(slog.DiscardHandler)}
		if _, err := low.once(context.Background()); err == nil || !strings.Contains(err.Error(), "skipped") {
			t.Fatalf("a snapshot on a disk with 1 MiB free: %v", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("a skipped snapshot left %s: %v", dir, err)
		}
		low.minFree = 0
		if _, err := low.once(context.Background()); err != nil {
			t.Fatalf("a snapshot that fits: %v", err)
		}
	})

	t.Run("ErrUnwritableDir", func(t *testing.T) {
		blocker := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(blocker, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		bad := &backupSchedule{eng: eng, dir: filepath.Join(blocker, "backups"), keep: 2, log: slog.New(slog.DiscardHandler)}
		if _, err := bad.once(context.Background()); err == nil {
			t.Fatal("a snapshot into a directory under a file succeeded")
		}
	})
}

// countEvents opens a data directory and counts a tenant's events.
func countEvents(t *testing.T, data, tenantID string) int {
	t.Helper()
	db, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	err = db.View(context.Background(), func(tx model.Tx) error {
		evs, _, err := tx.Events(tenantID, model.EventFilter{}, model.Page{Limit: 1 << 30})
		n = len(evs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBackupUnderWriteLoad takes a snapshot while writers ingest events. The restored
// node holds every event acknowledged before the snapshot began, and none that was not
// acknowledged by the time it ended, except the calls still in flight then: an event is
// committed before its caller hears of it, so each writer may have one event committed
// but not yet acknowledged. No event whose call began after the snapshot ended is there.
func TestBackupUnderWriteLoad(t *testing.T) {
	data := t.TempDir()
	_, eng, _ := testEngine(t, data)
	var ct *model.CreatedTenant
	if err := func() (err error) {
		ct, err = eng.AdminCreateTenant(context.Background(), model.CreateTenantInput{Name: "Acme", Slug: "acme", Email: "ops@acme.example", Country: "FR"})
		return err
	}(); err != nil {
		t.Fatal(err)
	}
	p := keyPrincipal(ct.Tenant.ID)
	var (
		mu       sync.Mutex
		acked    []string // keys acknowledged, in order
		late     []string // keys whose call began after the snapshot ended
		finished atomic.Bool
		stop     atomic.Bool
	)
	var warm, wg sync.WaitGroup
	const writers = 6
	warm.Add(writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				key, after := "w"+itoa(w)+"-"+itoa(i), finished.Load()
				if err := ingest(context.Background(), eng, p, key); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, key)
				if after {
					late = append(late, key)
				}
				mu.Unlock()
				if i == 20 {
					warm.Done()
				}
			}
		}()
	}
	warm.Wait()
	snap := filepath.Join(t.TempDir(), "snap.db")
	mu.Lock()
	before := slices.Clone(acked)
	mu.Unlock()
	if _, err := admin.BackupTo(context.Background(), eng, admin.BackupArgs{Path: snap}); err != nil {
		t.Fatal(err)
	}
	finished.Store(true)
	mu.Lock()
	atFinish := len(acked)
	mu.Unlock()
	// Let some calls begin after the snapshot, then stop.
	for {
		mu.Lock()
		n := len(late)
		mu.Unlock()
		if n >= writers || t.Failed() {
			break
		}
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := restore(restored, snap); err != nil {
		t.Fatal(err)
	}
	keys := eventKeys(t, restored, ct.Tenant.ID)
	t.Logf("acknowledged before the snapshot %d, when it ended %d, in all %d; restored %d", len(before), atFinish, len(acked), len(keys))
	for _, k := range before {
		if !keys[k] {
			t.Fatalf("event %s, acknowledged before the snapshot, is not in it", k)
		}
	}
	for _, k := range late {
		if keys[k] {
			t.Fatalf("event %s, sent after the snapshot ended, is in it", k)
		}
	}
	if len(keys) > atFinish+writers {
		t.Fatalf("restored %d events, more than the %d acknowledged when the snapshot ended and %d in flight", len(keys), atFinish, writers)
	}
}

// eventKeys opens a data directory and returns the idempotency keys of a tenant's events.
func eventKeys(t *testing.T, data, tenantID string) map[string]bool {
	t.Helper()
	db, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]bool{}
	err = db.View(context.Background(), func(tx model.Tx) error {
		evs, _, err := tx.Events(tenantID, model.EventFilter{}, model.Page{Limit: 1 << 30})
		for _, e := range evs {
			out[e.IdempotencyKey] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestRestoredSnapshotReproduces restores a snapshot into a new directory and finds
// every event, mission and pending outbox entry of the original.
func TestRestoredSnapshotReproduces(t *testing.T) {
	data := t.TempDir()
	db, eng, _ := testEngine(t, data)
	ctx := context.Background()
	var ct *model.CreatedTenant
	var p model.Principal
	err := func() (err error) {
		if ct, err = eng.AdminCreateTenant(context.Background(), model.CreateTenantInput{Name: "Acme", Slug: "acme", Email: "ops@acme.example", Country: "FR"}); err != nil {
			return err
		}
		p = keyPrincipal(ct.Tenant.ID)
		five := model.Int(5)
		_, err = eng.UpdateDispatchSettings(context.Background(), p, model.DispatchSettingsInput{ReinforcementTimeoutMin: &five}, nil)
		return err
	}()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := ingest(ctx, eng, p, "r-"+itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	var evs []model.Event
	err = eng.View(ctx, func(tx model.Tx) (err error) {
		evs, _, err = tx.Events(ct.Tenant.ID, model.EventFilter{}, model.Page{Limit: 10})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = func() error {
		for i, ev := range evs[:2] {
			team, err := eng.CreateTeam(context.Background(), tenantAdmin(ct.Tenant.ID), model.TeamInput{Name: "Team " + itoa(i), Verticals: []string{"emergency"},
				Members: []model.MemberInput{{Name: "Lead"}}}, nil)
			if err != nil {
				return err
			}
			if _, err := eng.DispatchTeam(context.Background(), p, model.DispatchInput{EventID: ev.ID, TeamID: team.ID}, nil); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		t.Fatal(err)
	}
	original := snapshotOf(t, db, ct.Tenant.ID)
	if len(original.events) != 5 || len(original.missions) != 2 || len(original.outbox) < 2 {
		t.Fatalf("original: %+v", original)
	}
	snap := filepath.Join(t.TempDir(), "snap.db")
	if _, err := admin.BackupTo(ctx, eng, admin.BackupArgs{Path: snap}); err != nil { // as a served node runs `fieldrelay backup`
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := restore(restored, snap); err != nil {
		t.Fatal(err)
	}
	rdb, err := store.Open(restored, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	got := snapshotOf(t, rdb, ct.Tenant.ID)
	if !slices.Equal(got.events, original.events) || !slices.Equal(got.missions, original.missions) || !slices.Equal(got.outbox, original.outbox) {
		t.Fatalf("restored %+v\noriginal %+v", got, original)
	}
}

// nodeContent lists what a restore must reproduce, as comparable strings.
type nodeContent struct {
	events, missions, outbox []string
}

func snapshotOf(t *testing.T, db *store.DB, tenantID string) nodeContent {
	t.Helper()
	var c nodeContent
	err := db.View(context.Background(), func(tx model.Tx) error {
		evs, _, err := tx.Events(tenantID, model.EventFilter{}, model.Page{Limit: 1000})
		if err != nil {
			return err
		}
		for _, e := range evs {
			c.events = append(c.events, e.ID+" "+e.Status+" "+e.IdempotencyKey)
		}
		ms, _, err := tx.Missions(tenantID, model.MissionFilter{}, model.Page{Limit: 1000})
		if err != nil {
			return err
		}
		for _, m := range ms {
			c.missions = append(c.missions, m.ID+" "+m.Status+" "+m.TeamID)
		}
		refs, err := tx.DueOutbox()
		for _, r := range refs {
			c.outbox = append(c.outbox, r.TenantID+" "+r.ID+" "+r.DueAt.UTC().Format(time.RFC3339Nano))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBackupErrUnwritablePath(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme")
	out := filepath.Join(t.TempDir(), "missing", "dir", "snap.db")
	e := runJSONError(t, a, "", "backup", "--data", data, "--out", out)
	if e.Error != string(model.KindValidation) || e.Field != "out" || !strings.Contains(e.Message, "cannot write the backup") {
		t.Fatalf("error: %+v", e)
	}
	if _, err := os.Stat(filepath.Dir(out)); !os.IsNotExist(err) {
		t.Fatalf("the failed backup created %s", filepath.Dir(out))
	}
}
