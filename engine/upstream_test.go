package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server/outbound"
	"github.com/fieldrelay/fieldrelay/store"
)

// fakeUpstream is a central node as the edge sees it: the two device endpoints, with the
// idempotency by sequence number and the in-order application of the real one.
type fakeUpstream struct {
	srv *httptest.Server
	key string

	mu         sync.Mutex
	mode       string // "" up; "down" 503; "drop" applies, then drops the connection once; "forget" forgets the device once
	reject     map[int64]bool
	deviceID   string
	hardware   string
	registers  int
	syncs      int
	applied    int64
	pending    map[int64]upItem
	received   map[int64]int              // sequence → how many times it came
	records    map[string]json.RawMessage // kind/id → the latest payload
	appliedLog []upItem                   // every item applied, in order
	// down serves POST /v1/devices/downstream when set (404 otherwise: an upstream without
	// a downstream): a log of downEnd changes that carry no record; downStuck answers
	// every pull at its own cursor, never nearer the end.
	down      bool
	downEnd   int64
	downStuck bool
	downPulls int
	downWaits int           // pulls that asked to wait
	downNews  chan struct{} // closed when the log changes (setDown)
}

type upItem struct {
	Seq        int64           `json:"sequence_number"`
	Kind       string          `json:"kind"`
	CapturedAt string          `json:"captured_at"`
	Payload    json.RawMessage `json:"payload"`
}

func newFakeUpstream(t *testing.T, key string) *fakeUpstream {
	f := &fakeUpstream{key: key, reject: map[int64]bool{}}
	f.reset()
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// reset forgets everything: an upstream restored from nothing.
func (f *fakeUpstream) reset() {
	f.deviceID, f.applied = "", 0
	f.pending, f.received, f.records = map[int64]upItem{}, map[int64]int{}, map[string]json.RawMessage{}
	f.appliedLog = nil
}

func (f *fakeUpstream) set(mode string) {
	f.mu.Lock()
	f.mode = mode
	f.mu.Unlock()
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/devices/downstream" {
		f.serveDown(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("x-svc-api-key") != f.key {
		answer(w, 401, map[string]string{"error": "unauthorized", "message": "invalid API key"})
		return
	}
	if f.mode == "down" {
		answer(w, 503, map[string]string{"error": "unavailable", "message": "down for the test"})
		return
	}
	switch r.URL.Path {
	case "/v1/devices/register":
		var in model.DeviceInput
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Platform != engine.PlatformNode || in.HardwareID == "" {
			answer(w, 400, map[string]string{"error": "validation_error", "message": "bad registration"})
			return
		}
		f.registers++
		status := 200
		if f.deviceID == "" {
			f.deviceID, f.hardware, status = model.NewID(), in.HardwareID, 201
		}
		answer(w, status, map[string]string{"device_id": f.deviceID})
	case "/v1/devices/sync":
		f.syncs++
		var in struct {
			DeviceID string   `json:"device_id"`
			Items    []upItem `json:"items"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			answer(w, 400, map[string]string{"error": "invalid_json", "message": err.Error()})
			return
		}
		if f.mode == "forget" {
			f.mode = ""
			f.reset()
		}
		if in.DeviceID != f.deviceID || f.deviceID == "" {
			answer(w, 404, map[string]string{"error": "not_found", "message": "device not found"})
			return
		}
		var results []map[string]any
		for _, it := range in.Items {
			f.received[it.Seq]++
			status := "duplicate"
			if _, held := f.pending[it.Seq]; it.Seq > f.applied && !held {
				f.pending[it.Seq], status = it, "pending"
			}
			results = append(results, map[string]any{"sequence_number": it.Seq, "status": status})
		}
		for {
			it, ok := f.pending[f.applied+1]
			if !ok {
				break
			}
			delete(f.pending, it.Seq)
			f.applied = it.Seq
			if f.reject[it.Seq] {
				continue
			}
			var id struct {
				ID      string `json:"id"`
				EventID string `json:"event_id"`
			}
			_ = json.Unmarshal(it.Payload, &id)
			if it.Kind == model.ChangeEvent {
				id.ID = id.EventID
			}
			f.records[it.Kind+"/"+id.ID] = it.Payload
			f.appliedLog = append(f.appliedLog, it)
		}
		for _, r := range results {
			seq := r["sequence_number"].(int64)
			if r["status"] == "pending" && seq <= f.applied {
				r["status"] = "applied"
				if f.reject[seq] {
					r["status"], r["error"], r["message"] = "rejected", "validation_error", "rejected for the test"
				}
			}
		}
		if f.mode == "drop" && len(in.Items) > 0 {
			// Applied, but the edge never hears it.
			f.mode = ""
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		answer(w, 200, map[string]any{"device_id": f.deviceID, "results": results, "released": []any{},
			"applied_through": f.applied})
	default:
		answer(w, 404, map[string]string{"error": "not_found", "message": "no such route"})
	}
}

// registrations counts the registrations.
func (f *fakeUpstream) registrations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.registers
}

// snapshot returns how many times each sequence came and the records by kind/id.
func (f *fakeUpstream) snapshot() (map[int64]int, map[string]json.RawMessage, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := map[int64]int{}
	for k, v := range f.received {
		rec[k] = v
	}
	recs := map[string]json.RawMessage{}
	for k, v := range f.records {
		recs[k] = v
	}
	return rec, recs, f.applied
}

// upKey is an API key of the fake upstream's tenant.
const upKey = "fr_live_UPSTREAMupstreamUPSTREAMupstream"

// upNode is a field node whose engine pushes upstream.
type upNode struct {
	*fieldNode
	logs *bytes.Buffer
}

func newUpNode(t *testing.T, opt model.UpstreamOptions) *upNode {
	t.Helper()
	n := &upNode{fieldNode: newFieldNode(t), logs: &bytes.Buffer{}}
	n.log = slog.New(slog.NewTextHandler(&lockedWriter{w: n.logs}, nil))
	if opt.Transport == nil {
		opt.Transport = outbound.UpstreamHTTP{}
	}
	n.up = opt
	n.open(t)
	return n
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (n *upNode) setUpstream(t *testing.T, in model.UpstreamInput) *model.UpstreamSettings {
	t.Helper()
	var s *model.UpstreamSettings
	mustDo(t, func() (err error) {
		s, err = n.e.SetUpstream(context.Background(), n.p, in, nil)
		return err
	})
	return s
}

func (n *upNode) status(t *testing.T) *model.UpstreamStatus {
	t.Helper()
	st, err := n.e.UpstreamStatus(context.Background(), n.p)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (n *upNode) changes(t *testing.T) []model.LogChange {
	t.Helper()
	var out []model.LogChange
	if err := n.e.View(context.Background(), func(tx model.Tx) (err error) {
		out, err = tx.Changes(n.p.TenantID, 0, 1<<20)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func (n *upNode) logEnd(t *testing.T) int64 {
	t.Helper()
	var end int64
	if err := n.e.View(context.Background(), func(tx model.Tx) (err error) {
		end, err = tx.ChangeLogEnd(n.p.TenantID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return end
}

// events posts k events and returns their ids.
func (n *upNode) events(t *testing.T, k int) []string {
	t.Helper()
	ids := make([]string, k)
	for i := range ids {
		ids[i] = n.post(t, "low", "north").EventID
	}
	return ids
}

// TestUpstream_ChangeLog: the log is written only while the tenant has an upstream, in
// the transaction of the change (a rolled back change leaves nothing), for events,
// dispatches and mission moves, with their record ids; the records held before the
// upstream was set come first, once each (the backfill).
func TestUpstream_ChangeLog(t *testing.T) {
	n := newUpNode(t, model.UpstreamOptions{})
	before := n.events(t, 3)
	if st := n.status(t); st.State != engine.UpstreamUnconfigured || n.logEnd(t) != 0 {
		t.Fatalf("without an upstream: %+v, log end %d", st, n.logEnd(t))
	}

	n.setUpstream(t, model.UpstreamInput{URL: "http://127.0.0.1:9", APIKey: upKey})
	if _, err := n.e.WalkUpstreamHistory(context.Background(), n.p.TenantID, 100); err != nil {
		t.Fatal(err)
	}
	if got := n.changes(t); len(got) != 3 {
		t.Fatalf("the history in the log: %+v", got)
	}
	ev := n.post(t, "high", "north").EventID
	d, err := n.dispatch(t, model.DispatchInput{EventID: ev, TeamID: n.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, func() error {
		_, err := n.e.UpdateMissionStatus(context.Background(), n.p, d.MissionID, model.MissionStatusInput{Status: model.MissionAck},
			engine.MoveSourceAPI, nil, nil)
		return err
	})
	end := n.logEnd(t)
	err = n.e.Update(context.Background(), func(tx model.Tx) error {
		e, err := tx.Event(n.p.TenantID, ev)
		if err != nil {
			return err
		}
		if err := tx.PutEvent(n.p.TenantID, e); err != nil {
			return err
		}
		return errors.New("rolled back")
	})
	if err == nil || n.logEnd(t) != end {
		t.Fatalf("a rolled back change moved the log from %d to %d (%v)", end, n.logEnd(t), err)
	}

	got := map[string]map[string]bool{}
	for i, c := range n.changes(t) {
		if c.Seq != int64(i+1) || !c.At.Equal(epoch) {
			t.Fatalf("change %d: %+v", i, c)
		}
		if got[c.Kind] == nil {
			got[c.Kind] = map[string]bool{}
		}
		got[c.Kind][c.ID] = true
	}
	if len(got) != 3 || !got[model.ChangeEvent][ev] || !got[model.ChangeDispatch][d.ID] || !got[model.ChangeMission][d.MissionID] {
		t.Fatalf("changes: %v", got)
	}
	if len(got[model.ChangeEvent]) != 4 || len(got[model.ChangeMission]) != 1 {
		t.Fatalf("changes of records made before the upstream: %v", got)
	}
	for _, id := range before {
		if !got[model.ChangeEvent][id] {
			t.Fatalf("event %s made before the upstream is not in the log", id)
		}
	}
	if st := n.status(t); st.Backlog != end || st.BacklogOldestAt == nil || st.State != engine.UpstreamPushing {
		t.Fatalf("status: %+v", st)
	}
}

// TestUpstream_TrimmedOnlyAfterAck: while the upstream is down nothing leaves the log;
// once it answers, the log is trimmed to its applied_through and it holds every record
// as it stands. A rejected item is counted and settles its sequence.
// It raises upstream_down while down, closed by the push that goes through.
func TestUpstream_TrimmedOnlyAfterAck(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{BatchSize: 7})
	up := newFakeUpstream(t, upKey)
	up.set("down")
	up.reject[3] = true
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})
	ids := n.events(t, 20)
	n.e.RunUpstream(ctx)
	st := n.status(t)
	if st.State != engine.UpstreamDown || st.Backlog != 20 || len(n.changes(t)) != 20 || st.LastError == nil ||
		!strings.Contains(*st.LastError, "503") || st.NextAttemptAt == nil {
		t.Fatalf("down: %+v", st)
	}
	if got := n.openAlerts(t, model.AlertUpstreamDown); len(got) != 1 || !strings.Contains(got[0].Message, "503") {
		t.Fatalf("upstream_down while down: %+v", got)
	}
	// The events, posted within one millisecond of the fake clock, entered the log by the
	// backfill's walk, in the order of their ids: the third of the log is rejected.
	rejected := n.changes(t)[2].ID

	up.set("")
	n.clock.Advance(2 * time.Second) // the first retry comes within 2 s
	n.e.RunUpstream(ctx)
	st = n.status(t)
	if st.State != engine.UpstreamIdle || st.Backlog != 0 || len(n.changes(t)) != 0 || st.LastError != nil ||
		st.AckedThrough != 20 || st.Rejected != 1 || st.LastRejection == nil || st.LastSuccessAt == nil {
		t.Fatalf("after the push: %+v", st)
	}
	if got := n.openAlerts(t, model.AlertUpstreamDown); len(got) != 0 {
		t.Fatalf("upstream_down after a push went through: %+v", got)
	}
	received, records, applied := up.snapshot()
	if applied != 20 || len(received) != 20 {
		t.Fatalf("upstream applied_through %d, received %d sequences", applied, len(received))
	}
	for _, id := range ids {
		raw, ok := records[model.ChangeEvent+"/"+id]
		if id == rejected {
			continue // sequence 3 was rejected
		}
		var ev model.Event
		if !ok || json.Unmarshal(raw, &ev) != nil || ev.ID != id || ev.Status != n.event(t, id).Status {
			t.Fatalf("event %s upstream: %s", id, raw)
		}
	}
}

// TestUpstream_Backoff: failed attempts wait RetryMin plus a random part whose ceiling
// doubles up to RetryMax; the waits vary (jitter); a success resets them.
func TestUpstream_Backoff(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{})
	up := newFakeUpstream(t, upKey)
	up.set("down")
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})
	n.events(t, 1)
	atCap := map[time.Duration]bool{} // the waits once the ceiling is RetryMax
	var longest time.Duration
	for i := 1; i <= 16; i++ {
		wait := n.e.RunUpstream(ctx)
		st := n.status(t)
		if st.Failures != i || st.NextAttemptAt == nil || st.LastAttemptAt == nil {
			t.Fatalf("failure %d: %+v", i, st)
		}
		delay := st.NextAttemptAt.Sub(st.LastAttemptAt.Time)
		ceil := min(time.Minute, time.Second<<i)
		if delay < time.Second-time.Millisecond || delay > ceil {
			t.Fatalf("failure %d: waits %s, want within [1s, %s]", i, delay, ceil)
		}
		if wait > delay+time.Millisecond || wait < delay-time.Millisecond {
			t.Fatalf("failure %d: RunUpstream says %s, the status %s", i, wait, delay)
		}
		if i >= 6 {
			atCap[delay] = true
			longest = max(longest, delay)
		}
		// Not yet due: nothing is tried.
		n.clock.Advance(delay - time.Millisecond*2)
		n.e.RunUpstream(ctx)
		if st := n.status(t); st.Failures != i {
			t.Fatalf("tried before its time: %+v", st)
		}
		n.clock.Advance(3 * time.Millisecond)
	}
	// 11 draws in [1 s, 60 s]: that they all coincide, or all stay under 10 s, is
	// practically impossible with jitter and certain without.
	if len(atCap) < 5 || longest < 10*time.Second {
		t.Fatalf("the waits at the ceiling hardly vary or do not grow: %v", atCap)
	}
	up.set("")
	n.e.RunUpstream(ctx)
	if st := n.status(t); st.State != engine.UpstreamIdle || st.Failures != 0 || st.NextAttemptAt != nil {
		t.Fatalf("after a success: %+v", st)
	}
	up.set("down")
	n.events(t, 1)
	n.e.RunUpstream(ctx)
	st := n.status(t)
	if d := st.NextAttemptAt.Sub(st.LastAttemptAt.Time); st.Failures != 1 || d > 2*time.Second {
		t.Fatalf("the first failure after a success waits %s (%+v)", d, st)
	}
}

// TestUpstream_DroppedAnswerAndRestart: the upstream applies a batch but the answer never
// arrives, and the edge restarts before it retries: it asks where the upstream stands and
// sends the rest, so no sequence reaches the upstream twice and nothing is missing.
func TestUpstream_DroppedAnswerAndRestart(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{BatchSize: 50})
	up := newFakeUpstream(t, upKey)
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})
	ids := n.events(t, 120)
	up.set("drop") // the first sync with items is applied, its answer lost
	n.e.RunUpstream(ctx)
	st := n.status(t)
	_, _, applied := up.snapshot()
	if st.State != engine.UpstreamDown || st.AckedThrough != 0 || applied != 50 || len(n.changes(t)) != 120 {
		t.Fatalf("after the dropped answer: upstream at %d, %+v", applied, st)
	}

	n.open(t) // the edge restarts
	n.clock.Advance(2 * time.Second)
	n.e.RunUpstream(ctx)
	st = n.status(t)
	received, records, applied := up.snapshot()
	if st.State != engine.UpstreamIdle || st.AckedThrough != 120 || applied != 120 {
		t.Fatalf("after the restart: upstream at %d, %+v", applied, st)
	}
	for seq, k := range received {
		if k != 1 {
			t.Errorf("sequence %d reached the upstream %d times", seq, k)
		}
	}
	for _, id := range ids {
		if records[model.ChangeEvent+"/"+id] == nil {
			t.Errorf("event %s is missing upstream", id)
		}
	}
	if len(received) != 120 {
		t.Fatalf("%d sequences received", len(received))
	}
}

// TestUpstream_DeviceForgotten: an upstream that no longer knows the device (restored from
// nothing) answers 404; the edge registers again and sends its log numbered from the new
// device's applied_through (0).
func TestUpstream_DeviceForgotten(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{})
	up := newFakeUpstream(t, upKey)
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})
	n.events(t, 5)
	n.e.RunUpstream(ctx)
	first := n.status(t).DeviceID
	up.set("forget")
	later := n.events(t, 3)
	n.e.RunUpstream(ctx)
	n.clock.Advance(2 * time.Second)
	n.e.RunUpstream(ctx)
	st := n.status(t)
	received, records, applied := up.snapshot()
	if st.State != engine.UpstreamIdle || st.Backlog != 0 || applied != 3 || len(received) != 3 || received[1] != 1 ||
		st.DeviceID == nil || *st.DeviceID == *first {
		t.Fatalf("after the upstream forgot the device: applied %d, received %v, %+v", applied, received, st)
	}
	for _, id := range later {
		if records[model.ChangeEvent+"/"+id] == nil {
			t.Errorf("event %s is missing upstream", id)
		}
	}
	// And the numbering holds for what follows.
	n.events(t, 2)
	n.e.RunUpstream(ctx)
	if _, _, applied := up.snapshot(); applied != 5 {
		t.Fatalf("applied_through %d, want 5", applied)
	}
}

// TestUpstream_Paused: a paused link keeps its log and calls nobody; resumed, it pushes.
func TestUpstream_Paused(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{})
	up := newFakeUpstream(t, upKey)
	paused := true
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey, Paused: &paused})
	n.events(t, 4)
	n.e.RunUpstream(ctx)
	if st := n.status(t); st.State != engine.UpstreamPaused || st.Backlog != 4 || up.registrations() != 0 {
		t.Fatalf("paused: %+v, %d registrations", st, up.registrations())
	}
	mustDo(t, func() error {
		_, err := n.e.AdminPauseUpstream(context.Background(), "acme", false)
		return err
	})
	n.e.RunUpstream(ctx)
	if st := n.status(t); st.State != engine.UpstreamIdle || st.Backlog != 0 {
		t.Fatalf("resumed: %+v", st)
	}
}

// TestUpstream_KeyNeverShown: the key reaches the upstream, but no answer, no log line
// and no byte of the database file holds it; only its prefix is shown.
func TestUpstream_KeyNeverShown(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{})
	up := newFakeUpstream(t, upKey)
	wrong := "fr_live_WRONGwrongWRONGwrongWRONGwrong00"
	s := n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: wrong})
	n.events(t, 2)
	n.e.RunUpstream(ctx) // 401: logged
	st := n.status(t)
	if st.State != engine.UpstreamDown || st.LastError == nil || !strings.Contains(*st.LastError, "401") {
		t.Fatalf("with a wrong key: %+v", st)
	}
	s2 := n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})
	n.e.RunUpstream(ctx)
	if st := n.status(t); st.State != engine.UpstreamIdle || up.registrations() != 1 {
		t.Fatalf("with the right key: %+v", st)
	}
	got, err := n.e.Upstream(ctx, n.p)
	if err != nil {
		t.Fatal(err)
	}
	if got.APIKeyPrefix != upKey[:12]+"…" || s.APIKeyPrefix != wrong[:12]+"…" {
		t.Fatalf("prefixes %q %q", got.APIKeyPrefix, s.APIKeyPrefix)
	}
	shown, _ := json.Marshal([]any{s, s2, got, n.status(t), n.e.Stats()})
	if err := n.db.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(n.dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{upKey, wrong} {
		secret := key[12:]
		for what, b := range map[string][]byte{"an answer": shown, "the log": n.logs.Bytes(), "the database file": file} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the key %s…", what, key[:12])
			}
		}
	}
	if !strings.Contains(n.logs.String(), "401") {
		t.Fatalf("the failure was not logged: %s", n.logs)
	}
}

// TestUpstream_Settings: bad settings are validation errors naming the field; http is
// allowed to loopback only; the key may be left out only for the same URL; tenant:admin
// is required.
func TestUpstream_Settings(t *testing.T) {
	n := newUpNode(t, model.UpstreamOptions{})
	set := func(p model.Principal, in model.UpstreamInput) (*model.UpstreamSettings, error) {
		var s *model.UpstreamSettings
		err := func() (err error) {
			s, err = n.e.SetUpstream(context.Background(), p, in, nil)
			return err
		}()
		return s, err
	}
	bad := "not a pem"
	for _, tc := range []struct {
		in    model.UpstreamInput
		field string
	}{
		{model.UpstreamInput{APIKey: upKey}, "url"},
		{model.UpstreamInput{URL: "central.example.org", APIKey: upKey}, "url"},
		{model.UpstreamInput{URL: "ftp://central.example.org", APIKey: upKey}, "url"},
		{model.UpstreamInput{URL: "http://central.example.org", APIKey: upKey}, "url"},
		{model.UpstreamInput{URL: "http://10.0.0.5:8080", APIKey: upKey}, "url"},
		{model.UpstreamInput{URL: "https://u:p@central.example.org", APIKey: upKey}, "url"},
		{model.UpstreamInput{URL: "https://central.example.org/?x=1", APIKey: upKey}, "url"},
		{model.UpstreamInput{URL: "https://central.example.org"}, "api_key"},
		{model.UpstreamInput{URL: "https://central.example.org", APIKey: "secret"}, "api_key"},
		{model.UpstreamInput{URL: "https://central.example.org", APIKey: upKey, CAPEM: &bad}, "ca_pem"},
	} {
		_, err := set(n.p, tc.in)
		AssertInvalid(t, err, tc.field)
	}
	tech := n.p
	tech.Role = model.RoleCompanyTech
	_, err := set(tech, model.UpstreamInput{URL: "https://central.example.org", APIKey: upKey})
	AssertKind(t, err, model.KindForbidden)
	_, err = n.e.UpstreamStatus(context.Background(), tech)
	AssertKind(t, err, model.KindForbidden)
	_, err = n.e.Upstream(context.Background(), n.p)
	AssertKind(t, err, model.KindNotFound)

	for _, u := range []string{"http://127.0.0.1:8443/", "http://localhost:1", "http://[::1]:8080", "https://central.example.org/fr/"} {
		s, err := set(n.p, model.UpstreamInput{URL: u, APIKey: upKey})
		if err != nil || strings.HasSuffix(s.URL, "/") {
			t.Fatalf("%s: %+v %v", u, s, err)
		}
	}
	// The same URL without a key keeps the key; a new one needs one.
	paused := true
	s, err := set(n.p, model.UpstreamInput{URL: "https://central.example.org/fr", Paused: &paused})
	if err != nil || !s.Paused || s.APIKeyPrefix != upKey[:12]+"…" || s.NodeID == "" {
		t.Fatalf("same URL: %+v %v", s, err)
	}
	_, err = set(n.p, model.UpstreamInput{URL: "https://other.example.org"})
	AssertInvalid(t, err, "api_key")
}
