package cli

import (
	"context"
	"encoding/pem"
	"fmt"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/cli/bench"
	"github.com/fieldrelay/fieldrelay/cli/bench/benchtest"
	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The tests of the bench command: its flags and environment, and runs against fake nodes,
// the admin socket and serve. The load generator's own tests are in cli/bench.

func runBenchJSON(t *testing.T, args ...string) bench.Report {
	t.Helper()
	return runJSON[bench.Report](t, newTestApp(nil), "", append([]string{"bench"}, args...)...)
}

func TestBenchCountAndErrors(t *testing.T) {
	node := benchtest.StartFakeNode(t, 25, false)
	rep := runBenchJSON(t, "--url", node.Server.URL, "--api-key", "k1", "--api-key", "k2,k3",
		"--conns", "6", "--count", "500", "--warmup", "0")
	got := node.Check(t)
	if got != 500 || rep.Requests != 500 {
		t.Fatalf("the node got %d requests and the report says %d, want exactly 500", got, rep.Requests)
	}
	if rep.Errors != 20 || rep.ErrorsByStatus["500"] != 20 || rep.OK != 480 || len(rep.TransportErrors) != 0 {
		t.Errorf("errors %d by status %v transport %v ok %d, want 20 × 500 and 480 ok",
			rep.Errors, rep.ErrorsByStatus, rep.TransportErrors, rep.OK)
	}
	if len(node.Keys) != 3 || node.Keys["k1"] < 100 || node.Keys["k2"] < 100 || node.Keys["k3"] < 100 {
		t.Errorf("keys used: %v, want k1, k2, k3 in turn", node.Keys)
	}
	l := rep.LatencyMS
	if rep.Conns != 6 || rep.Tenants != 3 || rep.BodyBytes != bench.BodySize || rep.RequestsPerSec <= 0 || rep.DurationSeconds <= 0 ||
		l.Max <= 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max || rep.Interrupted {
		t.Errorf("report: %+v", rep)
	}
}

func TestBenchDurationConnsAndWarmup(t *testing.T) {
	node := benchtest.StartFakeNode(t, 0, false)
	rep := runBenchJSON(t, "--url", node.Server.URL+"/", "--api-key", "k", "--conns", "5",
		"--duration", "300ms", "--warmup", "150ms")
	got := node.Check(t)
	// One keep-alive connection per worker: the five first dials, and far fewer than
	// requests (on a starved machine a worker may rarely dial again, so not exactly five).
	if c := node.NewConns.Load(); c < 5 || c > 10 || uint64(c) != rep.ConnectionsOpened || int(c) >= got/4 {
		t.Errorf("the node saw %d new connections for %d requests and the report %d, want 5 (one keep-alive per worker)",
			c, got, rep.ConnectionsOpened)
	}
	if rep.Requests == 0 || int(rep.Requests) >= got {
		t.Errorf("report %d requests, node %d: the warm-up must be sent and left out", rep.Requests, got)
	}
	if rep.DurationSeconds < 0.3 || rep.WarmupSeconds != 0.15 || rep.Errors != 0 || rep.OK != rep.Requests {
		t.Errorf("report: %+v", rep)
	}
}

func TestBenchTransportAndTLSErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	_ = ln.Close()
	rep := runBenchJSON(t, "--url", closed, "--api-key", "k", "--conns", "2", "--count", "10", "--warmup", "0")
	if rep.Requests != 10 || rep.Errors != 10 || rep.TransportErrors["connection_refused"] != 10 || rep.OK != 0 ||
		rep.TransportExamples["connection_refused"] == "" {
		t.Errorf("against a closed port: %+v", rep)
	}

	node := benchtest.StartFakeNode(t, 0, true)
	rep = runBenchJSON(t, "--url", node.Server.URL, "--api-key", "k", "--conns", "2", "--count", "4", "--warmup", "0")
	if rep.TransportErrors["tls"] != 4 {
		t.Errorf("an unknown certificate: transport errors %v", rep.TransportErrors)
	}
	rep = runBenchJSON(t, "--url", node.Server.URL, "--api-key", "k", "--conns", "2", "--count", "4", "--warmup", "0", "--insecure")
	if rep.OK != 4 {
		t.Errorf("--insecure: %+v", rep)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: node.Server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	rep = runBenchJSON(t, "--url", node.Server.URL, "--api-key", "k", "--conns", "2", "--count", "4", "--warmup", "0", "--ca", ca)
	if rep.OK != 4 {
		t.Errorf("--ca: %+v", rep)
	}
	node.Check(t)
}

func TestBenchCreatesTenants(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	fake := startFakeServer(t, data)
	node := benchtest.StartFakeNode(t, 0, false)
	r := run(t, a, "", "bench", "--url", node.Server.URL, "--data", data, "--tenants", "3", "--conns", "2",
		"--count", "30", "--warmup", "0")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	node.Check(t)
	if ops := fake.ran(); len(ops) != 3 || ops[0] != admin.OpTenantCreate {
		t.Fatalf("admin operations %v, want 3 × tenant.create", ops)
	}
	ts, err := fake.eng.AdminTenants(context.Background())
	if err != nil || len(ts) != 3 {
		t.Fatalf("tenants %v %v", ts, err)
	}
	for _, tn := range ts {
		if !strings.HasPrefix(tn.Slug, "bench-") || tn.LicenseType != engine.PlanMissionCritical {
			t.Errorf("tenant %s plan %s", tn.Slug, tn.LicenseType)
		}
		if !strings.Contains(r.stderr, tn.Slug) || !strings.Contains(r.stdout, tn.Slug) {
			t.Errorf("the tenant %s is not named in the output\nstdout: %s\nstderr: %s", tn.Slug, r.stdout, r.stderr)
		}
	}
	if len(node.Keys) != 3 || !strings.Contains(r.stdout, "requests:    30 (30 ok") {
		t.Errorf("keys used %v\n%s", node.Keys, r.stdout)
	}

	// Without a server on the data directory there is no tenant to create.
	e := runJSONError(t, a, "", "bench", "--url", node.Server.URL, "--data", t.TempDir(), "--count", "1")
	if e.Error != string(model.KindUnavailable) || !strings.Contains(e.Message, "serve") {
		t.Errorf("no server: %+v", e)
	}
}

func TestBenchAgainstServe(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	s := startServe(t, a, "--data", data, "--plain-http")
	rep := runBenchJSON(t, "--url", s.base, "--data", data, "--tenants", "2", "--conns", "4", "--count", "120", "--warmup", "0")
	if rep.ErrorsByStatus["404"] == 120 {
		t.Skip("this build does not serve POST /v1/events yet")
	}
	if rep.Requests != 120 || rep.OK != 120 || rep.Errors != 0 || len(rep.TenantsCreated) != 2 {
		t.Fatalf("against serve: %+v", rep)
	}
}

func TestBenchFlagErrors(t *testing.T) {
	a := newTestApp(nil)
	for _, c := range []struct {
		field string
		args  []string
	}{
		{"api-key", []string{"bench"}},
		{"url", []string{"bench", "--api-key", "k", "--url", "ftp://x"}},
		{"path", []string{"bench", "--api-key", "k", "--path", "v1/events"}},
		{"conns", []string{"bench", "--api-key", "k", "--conns", "0"}},
		{"count", []string{"bench", "--api-key", "k", "--count", "-1"}},
		{"duration", []string{"bench", "--api-key", "k", "--duration", "0s"}},
		{"tenants", []string{"bench", "--data", "x", "--tenants", "0"}},
		{"server-pid", []string{"bench", "--api-key", "k", "--server-pid", "-1"}},
		{"workload", []string{"bench", "--api-key", "k", "--workload", "dispatch"}},
		{"ca", []string{"bench", "--api-key", "k", "--ca", filepath.Join(t.TempDir(), "missing.pem")}},
	} {
		e := runJSONError(t, a, "", c.args...)
		if e.Error != string(model.KindValidation) || e.Field != c.field {
			t.Errorf("%v: %+v, want a validation_error on %s", c.args, e, c.field)
		}
	}
}

func TestBenchServerFigures(t *testing.T) {
	// The fake node runs in this process, so this process is the server to measure.
	node := benchtest.StartFakeNode(t, 0, false)
	rep := runBenchJSON(t, "--url", node.Server.URL, "--api-key", "k", "--conns", "4", "--duration", "300ms",
		"--warmup", "50ms", "--server-pid", strconv.Itoa(os.Getpid()))
	node.Check(t)
	s := rep.Server
	if s == nil {
		t.Fatal("no server figures with --server-pid")
	}
	if runtime.GOOS != "linux" {
		if len(s.Notes) == 0 || !strings.Contains(s.Notes[0], "/proc unreadable") {
			t.Errorf("without /proc: %s", benchtest.JSON(t, s))
		}
		return
	}
	if s.PID != os.Getpid() || s.PIDFrom != "--server-pid" || s.CPUSeconds == nil || *s.CPUSeconds <= 0 ||
		s.CPUMicrosPerRequest == nil || *s.CPUMicrosPerRequest <= 0 || s.DiskBytes == nil || s.DBFile != "" {
		t.Errorf("server figures: %s", benchtest.JSON(t, s))
	}

	// With --data the pid is the one behind the admin socket (this process too), and the
	// database file is measured; FIELDRELAY_SERVER_PID of a process that is gone is said.
	data := t.TempDir()
	startFakeServer(t, data)
	r := run(t, newTestApp(nil), "", "bench", "--url", node.Server.URL, "--api-key", "k", "--data", data,
		"--conns", "2", "--duration", "200ms", "--warmup", "0")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		fmt.Sprintf("server:      pid %d (from %s)", os.Getpid(), adminSocket(data)),
		"server cpu:  ", "µs/request", "disk writes: ",
		"db file:     " + filepath.Join(data, "fieldrelay.db"),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.stdout)
		}
	}
	gone := newTestApp(map[string]string{"FIELDRELAY_SERVER_PID": "999999999"})
	rep = runJSON[bench.Report](t, gone, "", "bench", "--url", node.Server.URL, "--api-key", "k", "--count", "5", "--warmup", "0")
	if rep.OK != 5 || rep.Server == nil || rep.Server.PID != 999999999 || rep.Server.CPUSeconds != nil ||
		len(rep.Server.Notes) != 2 || !strings.Contains(rep.Server.Notes[0], "/proc unreadable") {
		t.Errorf("a pid that is gone: %+v %s", rep, benchtest.JSON(t, rep.Server))
	}
	node.Check(t)
}

func TestBenchLifecycleCount(t *testing.T) {
	node := benchtest.StartFakeFieldNode(t)
	rep := runBenchJSON(t, "--url", node.Server.URL, "--api-key", "k1,k2", "--conns", "4", "--count", "60",
		"--warmup", "0", "--workload", "lifecycle")
	missions := node.Check(t)
	lc := rep.Lifecycle
	if rep.Workload != "lifecycle" || lc == nil {
		t.Fatalf("report: %s", benchtest.JSON(t, rep))
	}
	if lc.Cycles != 60 || lc.CyclesFailed != 0 || missions["COMPLETED"] != 60 || len(missions) != 1 {
		t.Errorf("cycles %d failed %d, missions on the node %v, want exactly 60 completed", lc.Cycles, lc.CyclesFailed, missions)
	}
	if rep.Requests != 360 || rep.OK != 360 || rep.Errors != 0 || lc.RequestsPerCycle != 6 || lc.CyclesPerSec <= 0 ||
		rep.RequestsPerSec < 5*lc.CyclesPerSec {
		t.Errorf("requests %d ok %d errors %d, %.2f cycles/s, %.2f req/s", rep.Requests, rep.OK, rep.Errors, lc.CyclesPerSec, rep.RequestsPerSec)
	}
	var names []string
	for _, s := range lc.Steps {
		names = append(names, s.Step)
		if s.Requests != 60 || s.OK != 60 || s.Errors != 0 || s.LatencyMS.Max <= 0 || s.LatencyMS.P50 > s.LatencyMS.P99 {
			t.Errorf("step %s: %+v", s.Step, s)
		}
	}
	if strings.Join(names, ",") != "event,dispatch,ack,on_route,on_site,completed" {
		t.Errorf("steps %v", names)
	}
	if l := lc.CycleLatencyMS; l.Max <= 0 || l.Mean < lc.Steps[0].LatencyMS.Mean || l.P50 > l.P99 {
		t.Errorf("cycle latency %+v", l)
	}
	node.Mu.Lock()
	keys := map[string]int{}
	for _, tm := range node.Teams {
		keys[tm.Key]++
	}
	node.Mu.Unlock()
	if lc.TeamsSetUp != 4 || lc.TeamsRecreated != 0 || len(node.Teams) != 4 || keys["k1"] != 2 || keys["k2"] != 2 {
		t.Errorf("teams: set up %d, recreated %d, by key %v", lc.TeamsSetUp, lc.TeamsRecreated, keys)
	}

	// The text report has the cycles and a line per step.
	r := run(t, newTestApp(nil), "", "bench", "--url", node.Server.URL, "--api-key", "k", "--conns", "2", "--count", "10",
		"--warmup", "0", "--workload", "lifecycle")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"lifecycle workload", "teams:       2 created before the run", "cycles:      10 ok, 0 failed",
		"requests:    60 (60 ok", "\n  event ", "\n  dispatch ", "\n  ack ", "\n  on_route ", "\n  on_site ", "\n  completed ", "\n  cycle "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the text report lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "created 2 teams") {
		t.Errorf("stderr: %s", r.stderr)
	}
	node.Check(t)
}

func TestBenchLifecycleErrorsByStep(t *testing.T) {
	// Every 7th ON_SITE answers 500: the cycle fails at that step, the mission is moved
	// to FAILED to free the team, and the next cycle goes on with the same team.
	node := benchtest.StartFakeFieldNode(t)
	node.FailStep, node.FailEvery, node.FailStatus = "on_site", 7, http.StatusInternalServerError
	rep := runBenchJSON(t, "--url", node.Server.URL, "--api-key", "k", "--conns", "3", "--count", "70",
		"--warmup", "0", "--workload", "lifecycle")
	missions := node.Check(t)
	lc := rep.Lifecycle
	failed := uint64(node.Failed["on_site"])
	if failed != 10 || lc.Cycles+lc.CyclesFailed != 70 || lc.CyclesFailed != failed || lc.Recoveries != failed ||
		lc.RecoveryErrors != 0 || lc.TeamsRecreated != 0 {
		t.Fatalf("injected %d failures; report: %s", failed, benchtest.JSON(t, lc))
	}
	if missions["COMPLETED"] != int(lc.Cycles) || missions["FAILED"] != int(failed) {
		t.Errorf("missions on the node %v", missions)
	}
	for _, s := range lc.Steps {
		want := uint64(70)
		if s.Step == "completed" {
			want = lc.Cycles
		}
		errs := uint64(0)
		if s.Step == "on_site" {
			errs = failed
		}
		if s.Requests != want || s.Errors != errs || s.ErrorsByStatus["500"] != errs || s.OK != want-errs {
			t.Errorf("step %s: %+v", s.Step, s)
		}
	}
	if rep.Errors != failed || rep.ErrorsByStatus["500"] != failed || rep.Requests != 70*5+lc.Cycles {
		t.Errorf("totals: requests %d errors %d %v", rep.Requests, rep.Errors, rep.ErrorsByStatus)
	}

	// Every 5th dispatch answers 409 team_unavailable: the worker takes a new team before
	// its next cycle (the last failure may end the run before that).
	node = benchtest.StartFakeFieldNode(t)
	node.FailStep, node.FailEvery, node.FailStatus = "dispatch", 5, http.StatusConflict
	rep = runBenchJSON(t, "--url", node.Server.URL, "--api-key", "k", "--conns", "2", "--count", "40",
		"--warmup", "0", "--workload", "lifecycle")
	node.Check(t)
	lc = rep.Lifecycle
	if lc.CyclesFailed != 8 || lc.Cycles != 32 || lc.TeamsRecreated < 6 || lc.TeamsRecreated > 8 || lc.Recoveries != 0 ||
		lc.Steps[1].ErrorsByStatus["409"] != 8 || lc.Steps[2].Requests != 32 || uint64(len(node.Teams)) != 2+lc.TeamsRecreated {
		t.Errorf("409 on dispatch: %s (teams on the node: %d)", benchtest.JSON(t, lc), len(node.Teams))
	}
}

func TestBenchLifecycleDurationWarmupAndEnv(t *testing.T) {
	node := benchtest.StartFakeFieldNode(t)
	a := newTestApp(map[string]string{"FIELDRELAY_WORKLOAD": "lifecycle"})
	rep := runJSON[bench.Report](t, a, "", "bench", "--url", node.Server.URL, "--api-key", "k", "--conns", "3",
		"--duration", "300ms", "--warmup", "100ms")
	missions := node.Check(t) // the cycles under way when the time was up were finished
	lc := rep.Lifecycle
	if rep.Workload != "lifecycle" || lc == nil || lc.Cycles == 0 || lc.CyclesFailed != 0 {
		t.Fatalf("report: %s", benchtest.JSON(t, rep))
	}
	if int(lc.Cycles) >= missions["COMPLETED"] {
		t.Errorf("%d cycles reported, %d on the node: the warm-up's must be left out", lc.Cycles, missions["COMPLETED"])
	}
	if rep.Requests != 6*lc.Cycles || rep.DurationSeconds < 0.3 || rep.WarmupSeconds != 0.1 {
		t.Errorf("report: %s", benchtest.JSON(t, rep))
	}
}

func TestBenchLifecycleTeams(t *testing.T) {
	// A node that refuses teams: the run does not start.
	node := benchtest.StartFakeFieldNode(t)
	node.RefuseTeams = true
	e := runJSONError(t, newTestApp(nil), "", "bench", "--url", node.Server.URL, "--api-key", "k", "--count", "5",
		"--workload", "lifecycle")
	if e.Error != string(model.KindUnavailable) || !strings.Contains(e.Message, "team") || !strings.Contains(e.Message, "403") {
		t.Errorf("teams refused: %+v", e)
	}
	node.Mu.Lock()
	if node.Steps["event"] != 0 {
		t.Errorf("%d events posted without a team", node.Steps["event"])
	}
	node.Mu.Unlock()
}

func TestBenchLifecycleAgainstServe(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	s := startServe(t, a, "--data", data, "--plain-http")
	rep := runBenchJSON(t, "--url", s.base, "--data", data, "--tenants", "2", "--conns", "4", "--count", "20",
		"--warmup", "0", "--workload", "lifecycle")
	if lc := rep.Lifecycle; lc == nil || lc.Cycles != 20 || rep.Requests != 120 || rep.Errors != 0 || lc.TeamsSetUp != 4 {
		t.Fatalf("against serve: %s", benchtest.JSON(t, rep))
	}
}
