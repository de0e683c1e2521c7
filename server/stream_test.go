package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
	"github.com/fieldrelay/fieldrelay/store/storetest"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
)

// newStreamNode is newNode with a stream ring of ring changes (default when 0) and a fast
// heartbeat.
func newStreamNode(t testing.TB, ring int) *node {
	t.Helper()
	db := storetest.MustOpenDB(t)
	n := &node{t: t, clock: model.NewFakeClock(modeltest.Epoch),
		mailer: &captureMailer{}, logs: &syncBuffer{}}
	log := slog.New(slog.NewJSONHandler(n.logs, nil))
	n.eng = engine.New(db, engine.Options{Clock: n.clock, Password: cheapPasswords, Mailer: n.mailer, Logger: log, StreamRing: ring})
	srv, err := server.New(context.Background(), n.eng, server.Config{Logger: log, StreamHeartbeat: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n.srv = srv
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	t.Cleanup(srv.CloseStreams) // before hs.Close: open streams would hold it
	n.url, n.client = hs.URL, hs.Client()
	return n
}

// sseEvent is one message of a stream.
type sseEvent struct {
	id, name string
	data     map[string]any
}

// sseClient reads a stream into a channel.
type sseClient struct {
	res    *http.Response
	events chan sseEvent
	mu     sync.Mutex
	raw    strings.Builder // comments and all, for the heartbeat test
	cancel context.CancelFunc
}

// stream opens GET /v1/stream with the given headers (name, value pairs) and expects 200.
func (n *node) stream(headers ...string) *sseClient {
	n.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", n.url+"/v1/stream", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := n.client.Do(req)
	if err != nil {
		cancel()
		n.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		n.t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	c := &sseClient{res: res, events: make(chan sseEvent, 10000), cancel: cancel}
	n.t.Cleanup(c.close)
	go c.read()
	return c
}

func (c *sseClient) close() { c.cancel(); c.res.Body.Close() }

func (c *sseClient) read() {
	defer close(c.events)
	sc := bufio.NewScanner(c.res.Body)
	var ev sseEvent
	var data string
	for sc.Scan() {
		line := sc.Text()
		c.mu.Lock()
		c.raw.WriteString(line + "\n")
		c.mu.Unlock()
		switch {
		case line == "":
			if data != "" {
				ev.data = map[string]any{}
				_ = json.Unmarshal([]byte(data), &ev.data)
				c.events <- ev
			}
			ev, data = sseEvent{}, ""
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
}

// next returns the next message that is not in skip, within 5 s.
func (c *sseClient) next(t testing.TB, skip ...string) sseEvent {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				t.Fatal("the stream ended")
			}
			if !containsStr(skip, ev.name) {
				return ev
			}
		case <-timeout:
			t.Fatal("no message within 5 s")
		}
	}
}

// none checks that no message but those in skip comes within d.
func (c *sseClient) none(t testing.TB, d time.Duration, skip ...string) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-c.events:
			if ok && !containsStr(skip, ev.name) {
				t.Fatalf("unexpected message %s %v", ev.name, ev.data)
			}
			if !ok {
				return
			}
		case <-timeout:
			return
		}
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (n *node) postEvent(key, idem, priority string) string {
	n.t.Helper()
	res := n.do("POST", "/v1/events", map[string]any{"type": "FIRE", "priority": priority, "vertical": "emergency",
		"idempotency_key": idem, "payload": map[string]any{"lat": 45.76, "lng": 4.84}}, "x-svc-api-key", key)
	res.want(http.StatusCreated)
	return res.str("event_id")
}

func TestStream(t *testing.T) {
	n := newStreamNode(t, 5)
	a := n.addTenant("acme", engine.PlanMissionCritical)
	b := n.addTenant("bravo", engine.PlanMissionCritical)
	sup := n.login(a.emails[model.RoleOperationalSupervisor])
	op := n.login(a.emails[model.RoleFieldOperator])
	var opUser *model.UserAccount
	var mine, other *model.Team
	err := n.eng.View(context.Background(), func(tx model.Tx) (err error) {
		opUser, err = tx.UserAccountByEmail(a.emails[model.RoleFieldOperator])
		return err
	})
	if err == nil {
		err = func() (err error) {
			if mine, err = n.eng.CreateTeam(context.Background(), tenantAdmin(a.tenant.ID), model.TeamInput{Name: "Mine", Verticals: []string{"emergency"},
				Members: []model.MemberInput{{Name: "op", UserID: opUser.ID}}}, nil); err != nil {
				return err
			}
			other, err = n.eng.CreateTeam(context.Background(), tenantAdmin(a.tenant.ID), model.TeamInput{Name: "Other", Verticals: []string{"emergency"},
				Members: []model.MemberInput{{Name: "someone else"}}}, nil)
			return err
		}()
	}
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Auth", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/stream", nil).wantErr(http.StatusUnauthorized, "unauthorized")
		n.do("GET", "/v1/stream", nil, "Authorization", "Bearer nope").wantErr(http.StatusUnauthorized, "unauthorized")
		var key *model.NewKey
		if err := func() (err error) {
			key, err = n.eng.AdminCreateAPIKey(context.Background(), "acme", model.CreateAPIKeyInput{Name: "zones", Scopes: []string{"zones:read"}})
			return err
		}(); err != nil {
			t.Fatal(err)
		}
		n.do("GET", "/v1/stream", nil, "x-svc-api-key", key.APIKey).wantErr(http.StatusForbidden, "forbidden")
		c := n.stream("x-svc-api-key", a.key) // an API key with events:read may watch too
		if ev := c.next(t); ev.name != "ready" {
			t.Fatalf("first message %s", ev.name)
		}
	})

	t.Run("FieldOperatorSeesItsTeamsOnly", func(t *testing.T) {
		n := n.on(t)
		opS := n.stream("Authorization", op)
		supS := n.stream("Authorization", sup)
		opS.next(t)
		supS.next(t)
		ev1, ev2 := n.postEvent(a.key, "fo-1", "high"), n.postEvent(a.key, "fo-2", "high")
		dispatch := func(event, team string) string {
			res := n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": event, "team_id": team}, "Authorization", sup)
			res.want(http.StatusCreated)
			return res.str("mission_id")
		}
		mOther := dispatch(ev2, other.ID)
		mMine := dispatch(ev1, mine.ID)
		n.do("PATCH", "/v1/missions/"+mOther+"/status", map[string]any{"status": "ACK"}, "Authorization", sup).want(http.StatusOK)
		n.do("PATCH", "/v1/missions/"+mMine+"/status", map[string]any{"status": "ACK"}, "Authorization", op).want(http.StatusOK)

		// The supervisor sees everything, in commit order (the alerts of the undispatched
		// high events are the alerts' own tests').
		alertMsgs := []string{"alert.raised", "alert.acked", "alert.closed"}
		var supNames []string
		for range 8 {
			ev := supS.next(t, alertMsgs...)
			supNames = append(supNames, ev.name)
		}
		want := "event.created event.created team.updated team.dispatched team.updated team.dispatched mission.status_updated mission.status_updated"
		if got := strings.Join(supNames, " "); got != want {
			t.Fatalf("supervisor saw %s\nwant %s", got, want)
		}
		// The operator sees both events, and of the missions only its own team's.
		var opSeen []string
		for range 5 {
			ev := opS.next(t, alertMsgs...)
			team, _ := ev.data["team_id"].(string)
			if ev.name == "team.updated" {
				team, _ = ev.data["id"].(string)
			}
			if team != "" && team != mine.ID {
				t.Fatalf("the operator saw %s of another team: %v", ev.name, ev.data)
			}
			if m, _ := ev.data["mission_id"].(string); m == mOther {
				t.Fatalf("the operator saw the other team's mission: %s %v", ev.name, ev.data)
			}
			opSeen = append(opSeen, ev.name)
		}
		if got := strings.Join(opSeen, " "); got != "event.created event.created team.updated team.dispatched mission.status_updated" {
			t.Fatalf("operator saw %s", got)
		}
		opS.none(t, 200*time.Millisecond, alertMsgs...)
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		n := n.on(t)
		bS := n.stream("x-svc-api-key", b.key)
		bS.next(t)
		n.postEvent(a.key, "iso-1", "low")
		bS.none(t, 300*time.Millisecond)
		id := n.postEvent(b.key, "iso-2", "low")
		if ev := bS.next(t); ev.name != "event.created" || ev.data["event_id"] != id {
			t.Fatalf("tenant B: %s %v", ev.name, ev.data)
		}
	})

	t.Run("ResumeAndReset", func(t *testing.T) {
		n := n.on(t)
		c := n.stream("Authorization", sup)
		c.next(t)
		first := n.postEvent(a.key, "res-1", "low")
		ev := c.next(t)
		if ev.data["event_id"] != first || ev.id == "" {
			t.Fatalf("first: %v", ev)
		}
		c.close()
		var ids []string
		for i := range 3 {
			ids = append(ids, n.postEvent(a.key, fmt.Sprintf("res-2-%d", i), "low"))
		}
		// Resumed: the three changes missed, in order, then live.
		r := n.stream("Authorization", sup, "Last-Event-ID", ev.id)
		if ready := r.next(t); ready.name != "ready" || ready.data["resumed"] != true {
			t.Fatalf("ready: %v", ready)
		}
		for _, id := range ids {
			if got := r.next(t); got.data["event_id"] != id {
				t.Fatalf("resumed %v, want %s", got.data["event_id"], id)
			}
		}
		live := n.postEvent(a.key, "res-3", "low")
		if got := r.next(t); got.data["event_id"] != live {
			t.Fatalf("live after resume: %v", got.data)
		}
		// Older than the ring (5 changes): reset.
		for i := range 6 {
			n.postEvent(a.key, fmt.Sprintf("res-4-%d", i), "low")
		}
		old := n.stream("Authorization", sup, "Last-Event-ID", ev.id)
		old.next(t) // ready
		if got := old.next(t); got.name != "reset" || got.id == "" {
			t.Fatalf("want reset, got %s %v", got.name, got.data)
		}
		// An id of another run of the node (or garbage): reset too.
		other := n.stream("Authorization", sup, "Last-Event-ID", "zzz-3")
		other.next(t)
		if got := other.next(t); got.name != "reset" {
			t.Fatalf("foreign id: %s", got.name)
		}
	})

	t.Run("HeartbeatAndExpiry", func(t *testing.T) {
		n := n.on(t)
		token := n.login(a.emails[model.RoleCorporateClient])
		c := n.stream("Authorization", token)
		c.next(t)
		deadline := time.Now().Add(5 * time.Second)
		for {
			c.mu.Lock()
			ping := strings.Contains(c.raw.String(), ": ping\n")
			c.mu.Unlock()
			if ping {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no heartbeat")
			}
			time.Sleep(10 * time.Millisecond) // poll the reader's buffer
		}
		now := n.clock.Now()
		n.clock.Advance(9 * time.Hour)
		defer n.clock.Set(now)
		ev := c.next(t)
		if ev.name != "error" || ev.data["error"] != "token_expired" {
			t.Fatalf("after expiry: %s %v", ev.name, ev.data)
		}
		if _, ok := <-c.events; ok {
			t.Fatal("the stream goes on after the token expired")
		}
	})

	t.Run("SlowClientNeverBlocksCommits", func(t *testing.T) {
		n := newStreamNode(t, 0)
		a := n.addTenant("delta", engine.PlanMissionCritical)
		sup := n.login(a.emails[model.RoleOperationalSupervisor])
		// A client that sends its request and never reads a byte.
		conn, err := net.Dial("tcp", strings.TrimPrefix(n.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(conn, "GET /v1/stream HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n", sup)
		good := n.stream("Authorization", sup)
		good.next(t)
		deadline := time.Now().Add(30 * time.Second)
		for n.eng.Stream().Subscribers(a.tenant.ID) < 2 {
			if time.Now().After(deadline) {
				t.Fatal("the stalled client did not subscribe")
			}
			time.Sleep(5 * time.Millisecond)
		}
		// Enough changes to fill the stalled client's socket and buffer (16 KB each): every
		// commit completes (a publish that blocked on the stalled client would hang here),
		// the stalled subscriber is dropped, the reading one gets all. How long the commits
		// took is logged, not asserted: speed is for benchmarks (make sse-bench).
		const total = 1000
		pad := strings.Repeat("x", 16000)
		var slowest time.Duration
		var last string
		for i := range total {
			start := time.Now()
			res := n.do("POST", "/v1/events", map[string]any{"type": "FIRE", "priority": "low", "vertical": "emergency",
				"idempotency_key": fmt.Sprintf("slow-%d", i), "payload": map[string]any{"pad": pad}}, "x-svc-api-key", a.key)
			res.want(http.StatusCreated)
			last = res.str("event_id")
			slowest = max(slowest, time.Since(start))
		}
		deadline = time.Now().Add(30 * time.Second)
		for n.eng.Stream().Subscribers(a.tenant.ID) != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%d subscribers: the stalled one was not dropped", n.eng.Stream().Subscribers(a.tenant.ID))
			}
			time.Sleep(5 * time.Millisecond)
		}
		got := 0
		for {
			ev := good.next(t)
			if ev.name == "reset" {
				t.Fatalf("the reading client was reset after %d changes", got)
			}
			got++
			if ev.data["event_id"] == last {
				break
			}
		}
		if got != total {
			t.Fatalf("the reading client got %d changes, want %d", got, total)
		}
		t.Logf("slowest of %d commits with a stalled stream client: %v", total, slowest)
	})

	t.Run("ShutdownEndsStreams", func(t *testing.T) {
		n := newStreamNode(t, 0)
		f := n.addTenant("charlie", engine.PlanMissionCritical)
		c := n.stream("x-svc-api-key", f.key)
		c.next(t)
		n.srv.CloseStreams()
		select {
		case _, ok := <-c.events:
			if ok {
				t.Fatal("a message after shutdown")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the stream did not end at shutdown")
		}
	})
}
