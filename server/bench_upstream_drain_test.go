package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/store/storetest"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// drainChanges is the backlog BenchmarkUpstreamDrain drains.
const drainChanges = 50_000

// BenchmarkUpstreamDrain measures replication edge → central on loopback: an edge node
// whose upstream is paused records 50,000 changes (events of 300-byte payloads, every
// 50th dispatched and its mission moved to COMPLETED), then the link is resumed and the
// edge's pusher drains the log into a central node served over real HTTP on 127.0.0.1,
// both on real, fsynced stores, the real clock. Each op is one fill and one drain; it
// reports the drain time and the changes per second.
//
//	make upstream-bench   (go test ./server -run XXX -bench UpstreamDrain -benchtime 1x -count 3)
func BenchmarkUpstreamDrain(b *testing.B) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	var drains []time.Duration
	var total int64
	b.StopTimer() // each op times its drain only
	for range b.N {
		central := openBenchEngine(b, quiet)
		var centralKey string
		if err := func() error {
			ct, err := central.AdminCreateTenant(context.Background(), model.CreateTenantInput{Name: "Central", Slug: "central",
				Email: "ops@central.example", Country: "FR", Plan: engine.PlanMissionCritical})
			if err != nil {
				return err
			}
			centralKey = ct.APIKey
			return nil
		}(); err != nil {
			b.Fatal(err)
		}
		srv, err := server.New(ctx, central, server.Config{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())

		edge := openBenchEngine(b, quiet)
		var edgeP model.Principal
		paused := true
		if err := func() error {
			et, err := edge.AdminCreateTenant(context.Background(), model.CreateTenantInput{Name: "Site", Slug: "site",
				Email: "ops@site.example", Country: "FR", Plan: engine.PlanMissionCritical})
			if err != nil {
				return err
			}
			edgeP = model.Principal{TenantID: et.Tenant.ID, TenantActive: true, Role: model.RoleCompanyAdmin}
			if _, err := edge.CreateTeam(context.Background(), tenantAdmin(edgeP.TenantID), model.TeamInput{Name: "Alpha", Verticals: []string{"healthcare"},
				Members: []model.MemberInput{{Name: "Ana", Phone: "+33600000001"}}}, nil); err != nil {
				return err
			}
			_, err = edge.SetUpstream(context.Background(), edgeP, model.UpstreamInput{URL: hs.URL, APIKey: centralKey, Paused: &paused}, nil)
			return err
		}(); err != nil {
			b.Fatal(err)
		}
		changes := fillChanges(b, edge, edgeP)

		b.StartTimer()
		start := time.Now()
		if err := func() error {
			_, err := edge.AdminPauseUpstream(context.Background(), "site", false)
			return err
		}(); err != nil {
			b.Fatal(err)
		}
		for {
			edge.RunUpstream(ctx)
			st, err := edge.UpstreamStatus(ctx, edgeP)
			if err != nil {
				b.Fatal(err)
			}
			if st.Backlog == 0 && st.State == engine.UpstreamIdle {
				break
			}
			if st.State == engine.UpstreamDown {
				b.Fatalf("the push failed: %s", *st.LastError)
			}
		}
		d := time.Since(start)
		b.StopTimer()
		drains, total = append(drains, d), total+changes
		hs.Close()
	}
	var sum time.Duration
	for _, d := range drains {
		sum += d
	}
	b.ReportMetric(sum.Seconds()/float64(len(drains)), "drain-s")
	b.ReportMetric(float64(total)/sum.Seconds(), "changes/s")
	b.ReportMetric(float64(total)/float64(len(drains)), "changes")
}

// openBenchEngine opens an engine on a fresh store with the real clock.
func openBenchEngine(b *testing.B, log *slog.Logger) *engine.Engine {
	db := storetest.MustOpenDB(b)
	return engine.New(db, engine.Options{Password: cheapPasswords, Logger: log,
		Upstream: model.UpstreamOptions{Transport: outbound.UpstreamHTTP{}}})
}

// fillChanges records events from 32 writers until the tenant's change log holds
// drainChanges changes; every 50th event is dispatched and its mission completed.
func fillChanges(b *testing.B, e *engine.Engine, p model.Principal) int64 {
	ctx := context.Background()
	pad := strings.Repeat("x", 260)
	render := func(v any) (model.Reply, error) {
		raw, err := json.Marshal(v)
		return model.Reply{Status: 201, Body: raw}, err
	}
	logEnd := func() int64 {
		var end int64
		if err := e.View(ctx, func(tx model.Tx) (err error) {
			end, err = tx.ChangeLogEnd(p.TenantID)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		return end
	}
	var team string
	if err := e.View(ctx, func(tx model.Tx) error {
		ts, err := tx.Teams(p.TenantID)
		team = ts[0].ID
		return err
	}); err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	var done atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex // one dispatch at a time: the team is one
	var firstErr atomic.Value
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				i := seq.Add(1)
				in := model.EventInput{Type: "MEDICAL_EMERGENCY", Priority: "low", Vertical: "healthcare",
					IdempotencyKey: fmt.Sprintf("drain-%d", i),
					Payload:        json.RawMessage(`{"severity":"high","description":"` + pad + `"}`)}
				reply, err := e.IngestEvent(ctx, p, in, render)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if i%50 != 0 {
					continue
				}
				var acc model.EventAccepted
				_ = json.Unmarshal(reply.Body, &acc)
				mu.Lock()
				err = func() error {
					d, err := e.DispatchTeam(context.Background(), p, model.DispatchInput{EventID: acc.EventID, TeamID: team}, nil)
					if err != nil {
						return err
					}
					for _, to := range []string{model.MissionAck, model.MissionOnRoute, model.MissionOnSite, model.MissionCompleted} {
						if _, err := e.UpdateMissionStatus(context.Background(), p, d.MissionID, model.MissionStatusInput{Status: to},
							engine.MoveSourceAPI, nil, nil); err != nil {
							return err
						}
					}
					return nil
				}()
				mu.Unlock()
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	for logEnd() < drainChanges && firstErr.Load() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	done.Store(true)
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		b.Fatal(err)
	}
	return logEnd()
}
