package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// TestTakeRate: takes from two stores on one database (two processes) add up, none lost;
// the take that opens a window drops the tenant's older windows and no other tenant's;
// the table is unlogged; a tenant that does not exist is not_found.
func TestTakeRate(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	ctx := context.Background()
	tenants := []string{model.NewID(), model.NewID()}
	for i, tn := range tenants {
		update(t, a, func(tx model.Tx) error {
			return tx.PutTenant(&model.Tenant{ID: tn, Name: "Acme", Slug: "acme-" + string(rune('a'+i)), Status: "active"})
		})
	}
	w0 := time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC)
	for _, tn := range tenants {
		if n, err := a.TakeRate(ctx, tn, w0, 7); err != nil || n != 7 {
			t.Fatalf("first take = %d, %v; want 7", n, err)
		}
	}
	w1 := w0.Add(time.Minute)
	var wg sync.WaitGroup
	for _, db := range []interface {
		TakeRate(context.Context, string, time.Time, int) (int, error)
	}{a, b} {
		for range 4 {
			wg.Go(func() {
				for range 25 {
					if _, err := db.TakeRate(ctx, tenants[0], w1, 3); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if n, err := b.TakeRate(ctx, tenants[0], w1, 0); err != nil || n != 2*4*25*3 {
		t.Fatalf("after 200 concurrent takes of 3: %d, %v; want 600", n, err)
	}
	type row struct {
		tenant string
		start  time.Time
	}
	var rows []row
	r, err := a.Pool().Query(ctx, "SELECT tenant_id::text, window_start FROM rate_windows ORDER BY 1, 2")
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var x row
		if err := r.Scan(&x.tenant, &x.start); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, x)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[row]bool{{tenants[0], w1}: true, {tenants[1], w0}: true}
	if len(rows) != 2 || !want[row{rows[0].tenant, rows[0].start.UTC()}] || !want[row{rows[1].tenant, rows[1].start.UTC()}] {
		t.Fatalf("rate_windows holds %v, want %v", rows, want)
	}
	var persistence string
	if err := a.Pool().QueryRow(ctx, "SELECT relpersistence::text FROM pg_class WHERE relname = 'rate_windows'").Scan(&persistence); err != nil || persistence != "u" {
		t.Fatalf("rate_windows persistence %q, %v; want unlogged", persistence, err)
	}
	_, err = a.TakeRate(ctx, model.NewID(), w1, 1)
	wantKind(t, err, model.KindNotFound)
}
