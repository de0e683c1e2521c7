// Package benchtest holds the fake nodes that the tests of `fieldrelay bench` run against:
// one that plays POST /v1/events, one that plays the field-response API. They do not use
// the engine.
package benchtest

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// EventBodySize is the size of the bodies FakeNode expects: bench.BodySize (a test of
// package bench checks that they agree; this package cannot import it).
const EventBodySize = 500

// JSON is v as JSON, for a test's message.
func JSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FakeNode is an httptest server that plays POST /v1/events: it checks each body, answers
// 201 JSON, and 500 to every failEvery-th request.
type FakeNode struct {
	Server    *httptest.Server
	FailEvery int
	NewConns  atomic.Int64

	Mu       sync.Mutex
	requests int
	Failed   int
	Keys     map[string]int
	idem     map[string]bool
	sizes    map[int]int
	Problems []string
}

func StartFakeNode(t *testing.T, failEvery int, tlsOn bool) *FakeNode {
	t.Helper()
	n := &FakeNode{FailEvery: failEvery, Keys: map[string]int{}, idem: map[string]bool{}, sizes: map[int]int{}}
	n.Server = httptest.NewUnstartedServer(http.HandlerFunc(n.handle))
	n.Server.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.NewConns.Add(1)
		}
	}
	n.Server.Config.ErrorLog = log.New(io.Discard, "", 0) // the TLS test's handshake failures
	if tlsOn {
		n.Server.StartTLS()
	} else {
		n.Server.Start()
	}
	t.Cleanup(n.Server.Close)
	return n
}

func (n *FakeNode) handle(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var ev struct {
		Type           string `json:"type"`
		Priority       string `json:"priority"`
		Vertical       string `json:"vertical"`
		IdempotencyKey string `json:"idempotency_key"`
		Payload        struct {
			Lat               float64  `json:"lat"`
			Lng               float64  `json:"lng"`
			Severity          string   `json:"severity"`
			RequiredEquipment []string `json:"required_equipment"`
			Description       string   `json:"description"`
		} `json:"payload"`
	}
	var problem string
	switch err := json.Unmarshal(raw, &ev); {
	case err != nil:
		problem = fmt.Sprintf("invalid JSON: %v: %s", err, raw)
	case r.Method != http.MethodPost || r.URL.Path != "/v1/events" || r.Header.Get("Content-Type") != "application/json":
		problem = fmt.Sprintf("%s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	case ev.Type == "" || !slices.Contains([]string{"critical", "high", "normal", "low"}, ev.Priority) ||
		!slices.Contains(model.StandardVerticals, ev.Vertical) || ev.IdempotencyKey == "":
		problem = fmt.Sprintf("bad event fields: %s", raw)
	case ev.Payload.Lat < 45.7 || ev.Payload.Lat > 45.8 || ev.Payload.Lng < 4.8 || ev.Payload.Lng > 4.9 ||
		!slices.Contains([]string{"critical", "high", "medium", "low"}, ev.Payload.Severity) || len(ev.Payload.RequiredEquipment) == 0 || ev.Payload.Description == "":
		problem = fmt.Sprintf("bad payload: %s", raw)
	}
	n.Mu.Lock()
	n.requests++
	fail := n.FailEvery > 0 && n.requests%n.FailEvery == 0
	if fail {
		n.Failed++
	}
	n.Keys[r.Header.Get("x-svc-api-key")]++
	if n.idem[ev.IdempotencyKey] {
		problem = "idempotency key repeated: " + ev.IdempotencyKey
	}
	n.idem[ev.IdempotencyKey] = true
	n.sizes[len(raw)]++
	if problem != "" {
		n.Problems = append(n.Problems, problem)
	}
	n.Mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":"internal_error","message":"boom","request_id":"r"}`)
		return
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"event_id":"0190a0b0-0000-7000-8000-000000000000","status":"delivered","channel_selected":"rest_full","created_at":"2026-06-09T10:11:12.345Z","request_id":"r"}`)
}

// check fails on any body the node did not like and returns the number of requests.
func (n *FakeNode) Check(t *testing.T) int {
	t.Helper()
	n.Mu.Lock()
	defer n.Mu.Unlock()
	for i, p := range n.Problems {
		if i == 5 {
			t.Errorf("… and %d more", len(n.Problems)-5)
			break
		}
		t.Error(p)
	}
	for size, c := range n.sizes {
		if size != EventBodySize {
			t.Errorf("%d bodies of %d bytes, want %d", c, size, EventBodySize)
		}
	}
	return n.requests
}

// FakeFieldNode is an httptest server that plays the field-response API minimally, with
// its state in maps: POST /v1/events, POST /v1/teams, POST /v1/teams/dispatch, PATCH
// /v1/missions/:id/status (the lifecycle, ACK straight from CREATED, FAILED from any open
// state, COMPLETED and FAILED free the team and close the event) and GET /v1/missions/:id.
// It answers failStatus, without any effect, to every failEvery-th request of failStep,
// and 403 to POST /v1/teams when refuseTeams is set. It does not use the engine.
type FakeFieldNode struct {
	Server      *httptest.Server
	FailStep    string
	FailEvery   int
	FailStatus  int
	RefuseTeams bool

	Mu       sync.Mutex
	seq      int
	events   map[string]*fakeEvent
	Teams    map[string]*fakeTeam
	missions map[string]*fakeMission
	Steps    map[string]int // requests by step name
	Failed   map[string]int // injected failures by step name
	Problems []string
}

type fakeEvent struct {
	key, vertical string
	closed        bool
}

type fakeTeam struct {
	Key, name, vertical, status string
}

type fakeMission struct {
	event, team, status string
	feedback            map[string]any
}

func StartFakeFieldNode(t *testing.T) *FakeFieldNode {
	t.Helper()
	n := &FakeFieldNode{events: map[string]*fakeEvent{}, Teams: map[string]*fakeTeam{}, missions: map[string]*fakeMission{},
		Steps: map[string]int{}, Failed: map[string]int{}}
	n.Server = httptest.NewServer(http.HandlerFunc(n.handle))
	t.Cleanup(n.Server.Close)
	return n
}

// fakeMoves are the moves the fake node allows, besides FAILED from any open state.
var fakeMoves = map[string]string{"CREATED": "ACK", "ACK": "ON_ROUTE", "ON_ROUTE": "ON_SITE", "ON_SITE": "COMPLETED"}

func (n *FakeFieldNode) handle(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	key := r.Header.Get("x-svc-api-key")
	answer := func(status int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
	fail := func(status int, code string) { answer(status, map[string]string{"error": code, "message": code}) }
	n.Mu.Lock()
	defer n.Mu.Unlock()
	problem := func(format string, args ...any) { n.Problems = append(n.Problems, fmt.Sprintf(format, args...)) }
	if r.Header.Get("Content-Type") != "application/json" || key == "" {
		problem("%s %s: content type %q, key %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"), key)
	}
	n.seq++
	id := fmt.Sprintf("0190a0b0-0000-7000-8000-%012d", n.seq)

	// step names the request as the report does, for injected failures and counts.
	step := ""
	var move struct {
		Status   string         `json:"status"`
		Feedback map[string]any `json:"feedback"`
	}
	rest, underMissions := strings.CutPrefix(r.URL.Path, "/v1/missions/")
	missionID, isStatus := strings.CutSuffix(rest, "/status")
	isMove := underMissions && isStatus
	switch {
	case r.Method == "POST" && r.URL.Path == "/v1/events":
		step = "event"
	case r.Method == "POST" && r.URL.Path == "/v1/teams/dispatch":
		step = "dispatch"
	case r.Method == "PATCH" && isMove:
		if err := json.Unmarshal(raw, &move); err != nil {
			problem("PATCH %s: %v", r.URL.Path, err)
		}
		step = strings.ToLower(move.Status)
	}
	if step != "" {
		n.Steps[step]++
		if step == n.FailStep && n.FailEvery > 0 && n.Steps[step]%n.FailEvery == 0 {
			n.Failed[step]++
			fail(n.FailStatus, "injected")
			return
		}
	}

	switch {
	case step == "event":
		var ev struct {
			Vertical string `json:"vertical"`
			Payload  struct {
				Lat float64 `json:"lat"`
				Lng float64 `json:"lng"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil || len(raw) != EventBodySize || ev.Payload.Lat < 45.7 || ev.Payload.Lat > 45.8 {
			problem("event body: %v: %s", err, raw)
		}
		n.events[id] = &fakeEvent{key: key, vertical: ev.Vertical}
		answer(http.StatusCreated, map[string]string{"event_id": id, "status": "delivered"})

	case r.Method == "POST" && r.URL.Path == "/v1/teams":
		if n.RefuseTeams {
			fail(http.StatusForbidden, "forbidden")
			return
		}
		var in model.TeamInput
		if err := json.Unmarshal(raw, &in); err != nil || in.Name == "" || len(in.Verticals) != 1 || len(in.Equipment) == 0 ||
			len(in.Members) != 1 || in.Members[0].Lat == nil || in.Members[0].Lng == nil ||
			math.Abs(*in.Members[0].Lat-45.75) > 0.05 || math.Abs(*in.Members[0].Lng-4.85) > 0.05 {
			problem("team body: %v: %s", err, raw)
			fail(http.StatusBadRequest, "validation_error")
			return
		}
		n.Teams[id] = &fakeTeam{Key: key, name: in.Name, vertical: in.Verticals[0], status: "available"}
		answer(http.StatusCreated, map[string]any{"id": id, "name": in.Name, "status": "available"})

	case step == "dispatch":
		var in struct {
			EventID string `json:"event_id"`
			TeamID  string `json:"team_id"`
		}
		_ = json.Unmarshal(raw, &in)
		ev, team := n.events[in.EventID], n.Teams[in.TeamID]
		switch {
		case ev == nil || team == nil || ev.key != key || team.Key != key:
			problem("dispatch of an unknown event or team, or another tenant's: %s", raw)
			fail(http.StatusNotFound, "not_found")
		case ev.closed:
			problem("dispatch to a closed event: %s", raw)
			fail(http.StatusConflict, "event_closed")
		case team.status != "available":
			problem("dispatch of a busy team: %s", raw)
			fail(http.StatusConflict, "team_unavailable")
		default:
			if ev.vertical != team.vertical {
				problem("team %s (%s) sent to a %s event", team.name, team.vertical, ev.vertical)
			}
			team.status = "on_mission"
			n.missions[id] = &fakeMission{event: in.EventID, team: in.TeamID, status: "CREATED"}
			answer(http.StatusCreated, map[string]string{"id": id, "event_id": in.EventID, "team_id": in.TeamID, "mission_id": id})
		}

	case r.Method == "PATCH" && isMove:
		m := n.missions[missionID]
		switch {
		case m == nil || n.Teams[m.team].Key != key:
			problem("move of an unknown mission %s", missionID)
			fail(http.StatusNotFound, "not_found")
		case m.status == "COMPLETED" || m.status == "FAILED":
			fail(http.StatusConflict, "mission_closed")
		case move.Status != "FAILED" && fakeMoves[m.status] != move.Status:
			problem("move %s → %s", m.status, move.Status)
			fail(http.StatusConflict, "invalid_transition")
		default:
			m.status = move.Status
			if move.Feedback != nil {
				m.feedback = move.Feedback
			}
			if move.Status == "COMPLETED" || move.Status == "FAILED" {
				if note, _ := move.Feedback["note"].(string); note == "" {
					problem("%s without a feedback note: %s", move.Status, raw)
				}
				n.Teams[m.team].status = "available"
				n.events[m.event].closed = true
			}
			answer(http.StatusOK, map[string]any{"id": missionID, "status": m.status, "feedback": m.feedback})
		}

	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/missions/"):
		if m := n.missions[strings.TrimPrefix(r.URL.Path, "/v1/missions/")]; m != nil {
			answer(http.StatusOK, map[string]any{"status": m.status})
			return
		}
		fail(http.StatusNotFound, "not_found")

	default:
		problem("unexpected %s %s", r.Method, r.URL.Path)
		fail(http.StatusNotFound, "not_found")
	}
}

// check fails on anything the node did not like and on a mission or team left open:
// every cycle ends its mission. It returns the missions by status.
func (n *FakeFieldNode) Check(t *testing.T) map[string]int {
	t.Helper()
	n.Mu.Lock()
	defer n.Mu.Unlock()
	for i, p := range n.Problems {
		if i == 5 {
			t.Errorf("… and %d more", len(n.Problems)-5)
			break
		}
		t.Error(p)
	}
	byStatus := map[string]int{}
	for _, m := range n.missions {
		byStatus[m.status]++
	}
	if byStatus["COMPLETED"]+byStatus["FAILED"] != len(n.missions) {
		t.Errorf("missions left open: %v", byStatus)
	}
	for id, tm := range n.Teams {
		if tm.status != "available" {
			t.Errorf("team %s (%s) left %s", id, tm.name, tm.status)
		}
	}
	return byStatus
}
