package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The dispatch benchmarks drive the field-response path through the real router and a
// real, fsynced store, without the network: POST /v1/events, POST /v1/teams/dispatch and
// the mission's moves PATCH /v1/missions/:id/status ACK → ON_ROUTE → ON_SITE → COMPLETED,
// which frees the team for the next cycle. Every write waits for its fdatasync, so one
// goroutine measures milliseconds per request: that is the disk, not the code.
//
//	go test ./server -run XXX -bench Dispatch -benchtime 200x

// benchCycleSteps names the six requests of a cycle, in order.
var benchCycleSteps = []string{"event", "dispatch", "ack", "on_route", "on_site", "completed"}

// benchMoves are the PATCH bodies of the four mission moves of a cycle.
var benchMoves = []string{
	`{"status":"ACK"}`,
	`{"status":"ON_ROUTE"}`,
	`{"status":"ON_SITE"}`,
	`{"status":"COMPLETED","feedback":{"note":"bench: resolved on site"}}`,
}

// dispatchBench is a node with one mission-critical tenant, driven through its router.
type dispatchBench struct {
	n   *node
	h   http.Handler
	key string
	tid string
	seq atomic.Int64
	pad string
}

func newDispatchBench(b *testing.B) *dispatchBench {
	n := newNode(b)
	f := n.addTenant("bench", "mission-critical")
	return &dispatchBench{n: n, h: n.handler(b), key: f.key, tid: f.tenant.ID, pad: strings.Repeat("x", 260)}
}

// teams creates count available healthcare teams, each with one member in Lyon, in one
// transaction.
func (d *dispatchBench) teams(b *testing.B, count int) []string {
	b.Helper()
	ids := make([]string, 0, count)
	lat, lng := 45.75, 4.85
	err := func() error {
		ids = ids[:0] // the function may run again
		for range count {
			i := d.seq.Add(1)
			t, err := d.n.eng.CreateTeam(context.Background(), tenantAdmin(d.tid), model.TeamInput{Name: fmt.Sprintf("bench team %d", i),
				Verticals: []string{"healthcare"}, Equipment: []string{"defibrillator", "stretcher"},
				Members: []model.MemberInput{{Name: fmt.Sprintf("lead %d", i), Lat: &lat, Lng: &lng}}}, nil)
			if err != nil {
				return err
			}
			ids = append(ids, t.ID)
		}
		return nil
	}()
	if err != nil {
		b.Fatal(err)
	}
	return ids
}

// call sends one request through the router and returns the answer's body; a status
// other than want fails the benchmark (Fatal only from the benchmark's goroutine, Error
// from the others).
func (d *dispatchBench) call(b *testing.B, method, path, body string, want int) []byte {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-svc-api-key", d.key)
	w := httptest.NewRecorder()
	d.h.ServeHTTP(w, req)
	if w.Code != want {
		b.Errorf("%s %s: status %d, want %d: %s", method, path, w.Code, want, w.Body.String())
		return nil
	}
	return w.Body.Bytes()
}

// event posts a new healthcare event near the teams and returns its id ("" on failure).
func (d *dispatchBench) event(b *testing.B) string {
	i := d.seq.Add(1)
	body := fmt.Sprintf(`{"type":"MEDICAL","priority":"high","vertical":"healthcare","idempotency_key":"dispatch-bench-%d",`+
		`"payload":{"lat":45.7%03d,"lng":4.8%03d,"severity":"high","required_equipment":["defibrillator"],"description":"%s"}}`,
		i, i%1000, i%997, d.pad)
	var res struct {
		EventID string `json:"event_id"`
	}
	_ = json.Unmarshal(d.call(b, "POST", "/v1/events", body, http.StatusCreated), &res)
	return res.EventID
}

// dispatch sends team to event and returns the mission's id ("" on failure).
func (d *dispatchBench) dispatch(b *testing.B, event, team string) string {
	var res struct {
		MissionID string `json:"mission_id"`
	}
	body := `{"event_id":"` + event + `","team_id":"` + team + `","notes":"bench: north gate"}`
	_ = json.Unmarshal(d.call(b, "POST", "/v1/teams/dispatch", body, http.StatusCreated), &res)
	return res.MissionID
}

// cycle runs the six requests of one cycle with team and adds each one's time to
// steps; it reports false when a request failed.
func (d *dispatchBench) cycle(b *testing.B, team string, steps *[6]atomic.Int64) bool {
	t0 := time.Now()
	ev := d.event(b)
	t1 := time.Now()
	steps[0].Add(int64(t1.Sub(t0)))
	if ev == "" {
		return false
	}
	m := d.dispatch(b, ev, team)
	t0, t1 = t1, time.Now()
	steps[1].Add(int64(t1.Sub(t0)))
	if m == "" {
		return false
	}
	for i, move := range benchMoves {
		if d.call(b, "PATCH", "/v1/missions/"+m+"/status", move, http.StatusOK) == nil {
			return false
		}
		t0, t1 = t1, time.Now()
		steps[2+i].Add(int64(t1.Sub(t0)))
	}
	return true
}

// reportSteps adds ns per request and per step to the benchmark's figures.
func reportSteps(b *testing.B, steps *[6]atomic.Int64, elapsed time.Duration) {
	if b.N == 0 {
		return
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(6*b.N), "ns/req")
	for i, name := range benchCycleSteps {
		b.ReportMetric(float64(steps[i].Load())/float64(b.N), name+"-ns/op")
	}
}

// BenchmarkDispatch measures one field-response cycle per op: POST /v1/events, POST
// /v1/teams/dispatch, then PATCH ACK, ON_ROUTE, ON_SITE and COMPLETED, which frees the
// team. ns/req is ns/op over the six requests; <step>-ns/op is the mean time that step's
// request took (in the parallel run, its latency with 32 cycles under way, so the steps
// add up to more than ns/op).
func BenchmarkDispatch(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		d := newDispatchBench(b)
		team := d.teams(b, 1)[0]
		var steps [6]atomic.Int64
		b.ReportAllocs()
		w0 := diskWrites(b)
		b.ResetTimer()
		for range b.N {
			if !d.cycle(b, team, &steps) {
				b.FailNow()
			}
		}
		b.StopTimer()
		reportSteps(b, &steps, b.Elapsed())
		b.ReportMetric(float64(diskWrites(b)-w0)/float64(6*b.N), "disk-B/req")
	})

	// Each goroutine owns a team of the pool and loops over cycles with it, so that 32
	// cycles are under way at once and the store's group commit has company.
	b.Run("parallel", func(b *testing.B) {
		d := newDispatchBench(b)
		const parallelism = 16 // × GOMAXPROCS goroutines
		pool := make(chan string, parallelism*runtime.GOMAXPROCS(0))
		for _, t := range d.teams(b, cap(pool)) {
			pool <- t
		}
		var steps [6]atomic.Int64
		var failed atomic.Bool
		b.ReportAllocs()
		b.SetParallelism(parallelism)
		w0 := diskWrites(b)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			team := <-pool
			for pb.Next() {
				if !failed.Load() && !d.cycle(b, team, &steps) {
					failed.Store(true)
				}
			}
		})
		b.StopTimer()
		if failed.Load() {
			b.FailNow()
		}
		reportSteps(b, &steps, b.Elapsed())
		b.ReportMetric(float64(diskWrites(b)-w0)/float64(6*b.N), "disk-B/req")
	})
}

// BenchmarkDispatchOnly measures POST /v1/teams/dispatch alone, one op each, over a pool
// of teams and events prepared outside the timer: when the pool is used up, the timer
// stops, the missions fail (PATCH FAILED frees the team and closes the event), new events
// are posted, and the timer starts again. A dispatch reads the tenant's teams (the
// notification config), so the pool's size is a parameter.
func BenchmarkDispatchOnly(b *testing.B) {
	for _, size := range []int{10, 1000} {
		b.Run(fmt.Sprintf("teams=%d", size), func(b *testing.B) {
			d := newDispatchBench(b)
			teams := d.teams(b, size)
			events := make([]string, size)
			missions := make([]string, 0, size)
			parallel := func(count int, fn func(i int)) {
				var wg sync.WaitGroup
				next := atomic.Int64{}
				for range 32 {
					wg.Go(func() {
						for i := int(next.Add(1) - 1); i < count; i = int(next.Add(1) - 1) {
							fn(i)
						}
					})
				}
				wg.Wait()
			}
			refill := func() {
				parallel(len(missions), func(i int) {
					d.call(b, "PATCH", "/v1/missions/"+missions[i]+"/status", `{"status":"FAILED"}`, http.StatusOK)
				})
				missions = missions[:0]
				parallel(size, func(i int) { events[i] = d.event(b) })
				if b.Failed() {
					b.FailNow()
				}
			}
			refill()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if i > 0 && i%size == 0 {
					b.StopTimer()
					refill()
					b.StartTimer()
				}
				m := d.dispatch(b, events[i%size], teams[i%size])
				if m == "" {
					b.FailNow()
				}
				missions = append(missions, m)
			}
		})
	}
}

// BenchmarkScore measures POST /v1/teams/dispatch/score through the real router: every
// team of the tenant read, scored and ranked for one event (the bound: under
// 2 ms per call with 1,000 teams).
func BenchmarkScore(b *testing.B) {
	for _, size := range []int{10, 1000} {
		b.Run(fmt.Sprintf("teams=%d", size), func(b *testing.B) {
			newDispatchBench(b).score(b, size)
		})
	}
}

// score makes size teams and measures the score of one event over them.
func (d *dispatchBench) score(b *testing.B, size int) {
	d.teams(b, size)
	body := `{"event_id":"` + d.event(b) + `"}`
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if d.call(b, "POST", "/v1/teams/dispatch/score", body, http.StatusOK) == nil {
			b.FailNow()
		}
	}
}
