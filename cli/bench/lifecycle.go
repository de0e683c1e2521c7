package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The lifecycle workload of `fieldrelay bench`: each worker owns a team and loops over
// cycles of six requests that carry one event from its arrival to the end of its mission:
//
//	POST  /v1/events                  201 → event_id
//	POST  /v1/teams/dispatch          201 → mission_id (the team goes on_mission)
//	PATCH /v1/missions/:id/status     200 ACK (allowed straight from CREATED)
//	PATCH /v1/missions/:id/status     200 ON_ROUTE
//	PATCH /v1/missions/:id/status     200 ON_SITE
//	PATCH /v1/missions/:id/status     200 COMPLETED with feedback (the team is available again)
//
// A failed step ends the cycle. When the mission exists, the worker then moves it to
// FAILED (a recovery request, outside the figures) so that its team is free again; when
// that fails too, or when its team is refused (409), the worker creates a new team.

// Workloads of --workload.
const (
	WorkloadEvents    = "events"
	WorkloadLifecycle = "lifecycle"
)

// benchStepCount is the number of requests of a lifecycle cycle.
const benchStepCount = 6

// Steps of a cycle, in order.
const (
	stepEvent = iota
	stepDispatch
	stepAck
	stepOnRoute
	stepOnSite
	stepCompleted
)

// benchStepInfo describes a step: its name in the report, its request and its success.
type benchStepInfo struct {
	name, method, path string
	status             int
	move               string // the mission status the step asks for
}

var benchStepInfos = [benchStepCount]benchStepInfo{
	{"event", http.MethodPost, "/v1/events", http.StatusCreated, ""},
	{"dispatch", http.MethodPost, "/v1/teams/dispatch", http.StatusCreated, ""},
	{"ack", http.MethodPatch, "/v1/missions/:id/status", http.StatusOK, "ACK"},
	{"on_route", http.MethodPatch, "/v1/missions/:id/status", http.StatusOK, "ON_ROUTE"},
	{"on_site", http.MethodPatch, "/v1/missions/:id/status", http.StatusOK, "ON_SITE"},
	{"completed", http.MethodPatch, "/v1/missions/:id/status", http.StatusOK, "COMPLETED"},
}

// benchTeamLat and benchTeamLng place every bench team's member in the middle of the area
// the events fall in (45.70–45.80, 4.80–4.90), so that a team is at most ~5 km away.
const benchTeamLat, benchTeamLng = 45.75, 4.85

// benchVertical is a vertical of benchEventTypes: the types of its events and the
// equipment they may call for, which its teams hold.
type benchVertical struct {
	name      string
	types     []int // indexes in benchEventTypes
	equipment []string
}

// benchVerticals are the verticals of benchEventTypes in the order they first appear.
var benchVerticals = func() []benchVertical {
	var out []benchVertical
	for i, et := range benchEventTypes {
		j := slices.IndexFunc(out, func(v benchVertical) bool { return v.name == et.vertical })
		if j < 0 {
			out = append(out, benchVertical{name: et.vertical})
			j = len(out) - 1
		}
		out[j].types = append(out[j].types, i)
		for _, e := range et.equipment {
			if !slices.Contains(out[j].equipment, e) {
				out[j].equipment = append(out[j].equipment, e)
			}
		}
	}
	return out
}()

// benchStepStats are the figures of one step of one worker.
type benchStepStats struct {
	hist      latencyHistogram // latencies of the successful answers
	requests  uint64
	errors    uint64
	byStatus  map[int]uint64
	transport map[string]uint64
}

// benchLifecycleWorker is a worker's lifecycle state and figures; only its worker
// touches it until the run has stopped.
type benchLifecycleWorker struct {
	key      string // the API key of the worker's tenant, which owns its team
	vertical benchVertical
	team     string // "": to create
	teamSeq  int    // teams this worker created during the run

	steps          [benchStepCount]benchStepStats
	cycleHist      latencyHistogram // whole cycles that succeeded
	cyclesFailed   uint64           // measured cycles that a step ended
	teamsCreated   uint64           // during the run, after a refused or stuck team
	teamErrors     uint64           // failed attempts to create one
	recoveries     uint64           // missions moved to FAILED after a failed step
	recoveryErrors uint64

	answer bytes.Buffer // the last answer read
}

// benchLifecycleAssignment is the tenant key and the vertical of worker id: workers go
// round the keys and, separately, round the verticals.
func benchLifecycleAssignment(id int, cfg *runConfig) (string, benchVertical) {
	key := ""
	if len(cfg.keys) > 0 {
		key = cfg.keys[id%len(cfg.keys)]
	}
	return key, benchVerticals[id%len(benchVerticals)]
}

func newBenchLifecycleWorker(id int, cfg *runConfig) *benchLifecycleWorker {
	lc := &benchLifecycleWorker{}
	lc.key, lc.vertical = benchLifecycleAssignment(id, cfg)
	if id < len(cfg.teams) {
		lc.team = cfg.teams[id]
	}
	for i := range lc.steps {
		lc.steps[i].byStatus = map[int]uint64{}
		lc.steps[i].transport = map[string]uint64{}
	}
	return lc
}

// benchTeamBody is the POST /v1/teams body of a worker's team: the vertical and the
// equipment of its events, one member near them.
func benchTeamBody(runID string, worker, seq int, v benchVertical) []byte {
	name := fmt.Sprintf("bench-%s-w%d", runID, worker)
	if seq > 0 {
		name += "-" + strconv.Itoa(seq)
	}
	lat, lng := benchTeamLat, benchTeamLng
	b, err := json.Marshal(model.TeamInput{Name: name, Verticals: []string{v.name}, Equipment: v.equipment,
		Members: []model.MemberInput{{Name: name + " lead", Lat: &lat, Lng: &lng}}})
	if err != nil { // cannot happen: plain strings and numbers
		panic(err)
	}
	return b
}

// benchDo sends one request with the key and reads the whole answer into buf, so that the
// connection is kept.
func benchDo(ctx context.Context, client *http.Client, userAgent, method, target, key string, body []byte, buf *bytes.Buffer) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-svc-api-key", key)
	req.Header.Set("User-Agent", userAgent)
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	buf.Reset()
	_, err = buf.ReadFrom(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return 0, err
	}
	return res.StatusCode, nil
}

// benchCreateTeam creates a team and returns its id.
func benchCreateTeam(ctx context.Context, client *http.Client, userAgent, base, key string, body []byte, buf *bytes.Buffer) (string, error) {
	status, err := benchDo(ctx, client, userAgent, http.MethodPost, base+"/v1/teams", key, body, buf)
	if err != nil {
		return "", err
	}
	var res struct {
		ID string `json:"id"`
	}
	if status != http.StatusCreated || json.Unmarshal(buf.Bytes(), &res) != nil || res.ID == "" {
		return "", fmt.Errorf("POST /v1/teams answered HTTP %d: %s", status, benchSnippet(buf.Bytes()))
	}
	return res.ID, nil
}

// benchSnippet is the start of an answer, for a message.
func benchSnippet(b []byte) string {
	const max = 300
	s := strings.TrimSpace(string(b))
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// createBenchTeams creates the team of each worker, before the run, a few at a time, and
// returns their ids by worker.
func createBenchTeams(ctx context.Context, cfg *runConfig) ([]string, error) {
	client := &http.Client{
		Transport: &http.Transport{Proxy: nil, TLSClientConfig: cfg.tls, MaxIdleConnsPerHost: 16,
			TLSHandshakeTimeout: 10 * time.Second},
		Timeout:       cfg.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer client.CloseIdleConnections()
	teams := make([]string, cfg.conns)
	errs := make([]error, cfg.conns)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range cfg.conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			key, v := benchLifecycleAssignment(i, cfg)
			var buf bytes.Buffer
			teams[i], errs[i] = benchCreateTeam(ctx, client, cfg.userAgent, cfg.base, key, benchTeamBody(cfg.runID, i, 0, v), &buf)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, model.Errorf(model.KindUnavailable, "cannot create the team of worker %d on %s: %v", i, cfg.base, err)
		}
	}
	return teams, nil
}

// lifecycleLoop runs cycles until the run stops. A cycle under way when the duration ends
// is finished (and counted), so that no team is left on a mission; Ctrl-C abandons it.
func (w *benchWorker) lifecycleLoop(r *benchRun) {
	cfg, lc := r.cfg, w.lc
	for !r.stopped.Load() {
		if lc.team == "" && !w.renewTeam(r) {
			if r.ctx.Err() != nil {
				return
			}
			select { // do not hammer a node that refuses teams
			case <-r.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		measured := !time.Now().Before(r.measureStart)
		if measured && cfg.count > 0 {
			n := r.issued.Add(1)
			if n >= cfg.count {
				r.stopped.Store(true) // the others stop; this one runs the last cycle
			}
			if n > cfg.count {
				return
			}
		}
		if !w.cycle(r, measured) {
			return // interrupted
		}
	}
}

// renewTeam creates a new team for the worker.
func (w *benchWorker) renewTeam(r *benchRun) bool {
	lc := w.lc
	lc.teamSeq++
	body := benchTeamBody(r.cfg.runID, w.id, lc.teamSeq, lc.vertical)
	id, err := benchCreateTeam(r.ctx, w.client, r.cfg.userAgent, r.cfg.base, lc.key, body, &lc.answer)
	if err != nil {
		lc.teamErrors++
		return false
	}
	lc.team = id
	lc.teamsCreated++
	return true
}

// cycle runs one cycle; it returns false when the run was interrupted under it.
func (w *benchWorker) cycle(r *benchRun, measured bool) bool {
	cfg, lc := r.cfg, w.lc
	begin := time.Now()
	var eventID, missionID string
	for s := range benchStepCount {
		info := &benchStepInfos[s]
		target, body := cfg.target, []byte(nil)
		switch s {
		case stepEvent:
			body = w.event(cfg.runID)
		case stepDispatch:
			target = cfg.base + info.path
			body = []byte(`{"event_id":"` + eventID + `","team_id":"` + lc.team + `","notes":"bench ` + cfg.runID + `: north gate"}`)
		case stepCompleted:
			target = cfg.base + "/v1/missions/" + missionID + "/status"
			body = []byte(`{"status":"COMPLETED","feedback":{"note":"bench ` + cfg.runID + `: resolved on site, worker ` +
				strconv.Itoa(w.id) + `"}}`)
		default:
			target = cfg.base + "/v1/missions/" + missionID + "/status"
			body = []byte(`{"status":"` + info.move + `"}`)
		}
		t0 := time.Now()
		status, err := benchDo(r.ctx, w.client, cfg.userAgent, info.method, target, lc.key, body, &lc.answer)
		lat := time.Since(t0)
		if err != nil && r.ctx.Err() != nil {
			return false // interrupted: abandoned, not counted
		}
		ok := err == nil && status == info.status
		if ok {
			switch s {
			case stepEvent:
				eventID, ok = benchAnswerField(lc.answer.Bytes(), "event_id")
			case stepDispatch:
				missionID, ok = benchAnswerField(lc.answer.Bytes(), "mission_id")
			}
			if !ok {
				err = fmt.Errorf("HTTP %d without its id: %s", status, benchSnippet(lc.answer.Bytes()))
			}
		}
		if measured {
			w.recordStep(s, status, err, lat, ok)
		} else {
			w.warm.Add(1)
		}
		if !ok {
			if measured {
				lc.cyclesFailed++
			}
			w.recover(r, s, status, missionID)
			return r.ctx.Err() == nil
		}
	}
	if measured {
		lc.cycleHist.record(time.Since(begin))
		w.cycles.Add(1)
	}
	return true
}

// benchAnswerField reads a string field of a JSON answer.
func benchAnswerField(b []byte, name string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return "", false
	}
	var v string
	if json.Unmarshal(m[name], &v) != nil || v == "" {
		return "", false
	}
	return v, true
}

// recordStep counts a measured request of step s in the step's figures and the totals.
func (w *benchWorker) recordStep(s, status int, err error, lat time.Duration, ok bool) {
	st := &w.lc.steps[s]
	st.requests++
	switch {
	case ok:
		st.hist.record(lat)
		w.hist.record(lat)
	case err != nil:
		kind := "bad_answer"
		if status == 0 {
			kind = transportErrorKind(err)
		}
		st.transport[kind]++
		w.transport[kind]++
		if _, seen := w.examples[kind]; !seen {
			w.examples[kind] = benchStepInfos[s].name + ": " + err.Error()
		}
		st.errors++
		w.errs.Add(1)
	default:
		st.byStatus[status]++
		st.errors++
		w.byStatus[status]++
		w.errs.Add(1)
	}
	w.done.Add(1)
}

// recover frees the worker's team after step s failed: the mission, when there is one,
// moves to FAILED; a team that was refused, or whose mission could not be ended, is
// replaced by a new one on the next cycle.
func (w *benchWorker) recover(r *benchRun, s, status int, missionID string) {
	lc := w.lc
	switch {
	case s == stepDispatch && status == http.StatusConflict:
		lc.team = "" // busy (a mission of a failed cycle is still on), or gone
	case s > stepDispatch:
		if r.ctx.Err() != nil {
			return
		}
		lc.recoveries++
		st, err := benchDo(r.ctx, w.client, r.cfg.userAgent, http.MethodPatch, r.cfg.base+"/v1/missions/"+missionID+"/status", lc.key,
			[]byte(`{"status":"FAILED","feedback":{"note":"bench: a step failed"}}`), &lc.answer)
		// 409 mission_closed: the failed step did end the mission, and freed the team.
		if err != nil || (st != http.StatusOK && st != http.StatusConflict) {
			lc.recoveryErrors++
			lc.team = ""
		}
	}
}

// LifecycleReport is the "lifecycle" object of the JSON report.
type LifecycleReport struct {
	Cycles           uint64         `json:"cycles"`        // measured cycles whose six requests succeeded
	CyclesFailed     uint64         `json:"cycles_failed"` // measured cycles that a failed step ended
	CyclesPerSec     float64        `json:"cycles_per_sec"`
	RequestsPerCycle int            `json:"requests_per_cycle"`
	CycleLatencyMS   LatencySummary `json:"cycle_latency_ms"` // of the successful cycles
	Steps            []StepReport   `json:"steps"`
	TeamsSetUp       int            `json:"teams_set_up"`    // created before the run, one per worker
	TeamsRecreated   uint64         `json:"teams_recreated"` // created during the run
	TeamErrors       uint64         `json:"team_errors"`
	Recoveries       uint64         `json:"recoveries"` // missions moved to FAILED after a failed step
	RecoveryErrors   uint64         `json:"recovery_errors"`
}

// StepReport is the figures of one step.
type StepReport struct {
	Step            string            `json:"step"`
	Method          string            `json:"method"`
	Path            string            `json:"path"`
	Requests        uint64            `json:"requests"`
	OK              uint64            `json:"ok"`
	Errors          uint64            `json:"errors"`
	ErrorsByStatus  map[string]uint64 `json:"errors_by_status"`
	TransportErrors map[string]uint64 `json:"transport_errors"`
	LatencyMS       LatencySummary    `json:"latency_ms"` // of its successful answers
}

// lifecycleReport merges the workers' lifecycle figures.
func lifecycleReport(workers []*benchWorker, setUp int, seconds float64) *LifecycleReport {
	rep := &LifecycleReport{RequestsPerCycle: benchStepCount, TeamsSetUp: setUp}
	var cycles latencyHistogram
	var steps [benchStepCount]benchStepStats
	for i := range steps {
		steps[i].byStatus, steps[i].transport = map[int]uint64{}, map[string]uint64{}
	}
	for _, w := range workers {
		lc := w.lc
		if lc == nil {
			continue
		}
		cycles.merge(&lc.cycleHist)
		rep.CyclesFailed += lc.cyclesFailed
		rep.TeamsRecreated += lc.teamsCreated
		rep.TeamErrors += lc.teamErrors
		rep.Recoveries += lc.recoveries
		rep.RecoveryErrors += lc.recoveryErrors
		for i := range steps {
			src, dst := &lc.steps[i], &steps[i]
			dst.hist.merge(&src.hist)
			dst.requests += src.requests
			dst.errors += src.errors
			for k, n := range src.byStatus {
				dst.byStatus[k] += n
			}
			for k, n := range src.transport {
				dst.transport[k] += n
			}
		}
	}
	rep.Cycles = cycles.n
	if seconds > 0 {
		rep.CyclesPerSec = math.Round(float64(rep.Cycles)/seconds*100) / 100
	}
	rep.CycleLatencyMS = cycles.summary()
	for i, st := range steps {
		info := benchStepInfos[i]
		sr := StepReport{Step: info.name, Method: info.method, Path: info.path, Requests: st.requests,
			OK: st.requests - st.errors, Errors: st.errors, ErrorsByStatus: map[string]uint64{},
			TransportErrors: st.transport, LatencyMS: st.hist.summary()}
		for s, n := range st.byStatus {
			sr.ErrorsByStatus[strconv.Itoa(s)] = n
		}
		rep.Steps = append(rep.Steps, sr)
	}
	return rep
}

func (r *LifecycleReport) printTeams(w io.Writer) {
	fmt.Fprintf(w, "  teams:       %d created before the run (one per worker), %d during it", r.TeamsSetUp, r.TeamsRecreated)
	if r.TeamErrors > 0 {
		fmt.Fprintf(w, ", %d attempts failed", r.TeamErrors)
	}
	fmt.Fprintln(w)
}

func (r *LifecycleReport) printCycles(w io.Writer) {
	fmt.Fprintf(w, "  cycles:      %d ok, %d failed = %.2f cycles/s (%d requests each)\n",
		r.Cycles, r.CyclesFailed, r.CyclesPerSec, r.RequestsPerCycle)
	if r.Recoveries > 0 {
		fmt.Fprintf(w, "  recoveries:  %d missions moved to FAILED after a failed step (%d of them failed)\n", r.Recoveries, r.RecoveryErrors)
	}
}

func (r *LifecycleReport) printSteps(w io.Writer) {
	fmt.Fprintf(w, "  %-11s  %-6s %-26s %9s %7s %8s %8s %8s %8s %8s  %s\n",
		"step", "method", "path", "requests", "errors", "p50 ms", "p90 ms", "p99 ms", "max ms", "mean ms", "errors by kind")
	for _, s := range r.Steps {
		l := s.LatencyMS
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(s.ErrorsByStatus)) {
			kinds = append(kinds, fmt.Sprintf("HTTP %s: %d", k, s.ErrorsByStatus[k]))
		}
		for _, k := range slices.Sorted(maps.Keys(s.TransportErrors)) {
			kinds = append(kinds, fmt.Sprintf("%s: %d", k, s.TransportErrors[k]))
		}
		line := fmt.Sprintf("  %-11s  %-6s %-26s %9d %7d %8.2f %8.2f %8.2f %8.2f %8.2f  %s",
			s.Step, s.Method, s.Path, s.Requests, s.Errors, l.P50, l.P90, l.P99, l.Max, l.Mean, strings.Join(kinds, ", "))
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	l := r.CycleLatencyMS
	fmt.Fprintf(w, "  %-11s  %-6s %-26s %9d %7d %8.2f %8.2f %8.2f %8.2f %8.2f\n",
		"cycle", "", "(six requests)", r.Cycles+r.CyclesFailed, r.CyclesFailed, l.P50, l.P90, l.P99, l.Max, l.Mean)
}
