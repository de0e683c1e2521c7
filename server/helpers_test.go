package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
	"github.com/fieldrelay/fieldrelay/engine/netguard"
	"github.com/fieldrelay/fieldrelay/engine/password"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/fieldrelay/fieldrelay/server/servertest"
	"github.com/fieldrelay/fieldrelay/store/storetest"
)

// cheapPasswords keeps argon2id fast in tests.
var cheapPasswords = password.Params{Time: 1, Memory: 64, Threads: 1}

const testPassword = "correct horse battery"

// captureMailer keeps the tokens the engine sends.
type captureMailer struct {
	mu     sync.Mutex
	tokens []model.IssuedToken
}

func (m *captureMailer) SendToken(_ context.Context, t *model.IssuedToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens = append(m.tokens, *t)
	return nil
}

func (m *captureMailer) last(t *testing.T, kind string) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.tokens) - 1; i >= 0; i-- {
		if m.tokens[i].Kind == kind {
			return m.tokens[i].Token
		}
	}
	t.Fatalf("no %s token was sent", kind)
	return ""
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer = servertest.SyncBuffer

// node is a real server on 127.0.0.1 over a store in a temp dir, with a fake clock.
type node struct {
	t      testing.TB
	url    string
	eng    *engine.Engine
	clock  *model.FakeClock
	mailer *captureMailer
	logs   *syncBuffer
	client *http.Client
	srv    *server.Server
}

// on returns the node bound to a subtest's t, so that failures stop the right test.
func (n *node) on(t testing.TB) *node { c := *n; c.t = t; return &c }

// handler returns the node's router, for benchmarks that skip the network.
func (n *node) handler(testing.TB) http.Handler { return n.srv.Handler() }

// tenantFix is a tenant with its first API key and a user of each role.
type tenantFix struct {
	tenant *model.Tenant
	key    string
	emails map[string]string // role → email
}

// nodeOptions vary a test node.
type nodeOptions struct {
	// realPasswords uses the production argon2id costs.
	realPasswords bool
	// internalSecret guards /metrics (none when empty).
	internalSecret string
	// sender makes the node's webhook and SMS calls (engine.NoSender when nil); tests
	// drive it with eng.RunDue.
	sender model.Sender
	// webhookPolicy says which addresses webhook URLs may name.
	webhookPolicy netguard.AddressPolicy
	// store is the node's store (a fresh bbolt one when nil).
	store model.Store
	// systemClock runs the engine on the system clock (n.clock then moves nothing), for
	// benchmarks that start the scheduler.
	systemClock bool
}

func newNode(t testing.TB) *node { t.Helper(); return newNodeWith(t, nodeOptions{}) }

func newNodeWith(t testing.TB, opt nodeOptions) *node {
	t.Helper()
	var db model.Store = opt.store
	if db == nil {
		db = storetest.MustOpenDB(t)
	}
	n := &node{t: t, clock: model.NewFakeClock(modeltest.Epoch),
		mailer: &captureMailer{}, logs: &syncBuffer{}}
	log := slog.New(slog.NewJSONHandler(n.logs, nil))
	pw := cheapPasswords
	if opt.realPasswords {
		pw = password.DefaultParams
	}
	var clock model.Clock = n.clock
	if opt.systemClock {
		clock = model.SystemClock{}
	}
	n.eng = engine.New(db, engine.Options{Clock: clock, Password: pw, Mailer: n.mailer, Logger: log,
		Sender: opt.sender, WebhookPolicy: opt.webhookPolicy})
	srv, err := server.New(context.Background(), n.eng, server.Config{Logger: log, InternalSecret: opt.internalSecret})
	if err != nil {
		t.Fatal(err)
	}
	n.srv = srv
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	n.url, n.client = hs.URL, hs.Client()
	return n
}

// addTenant creates a tenant with a user of every role.
func (n *node) addTenant(slug, plan string) *tenantFix {
	n.t.Helper()
	f := &tenantFix{emails: map[string]string{}}
	err := func() error {
		ct, err := n.eng.AdminCreateTenant(context.Background(), model.CreateTenantInput{Name: slug + " org", Slug: slug,
			Email: "ops@" + slug + ".example", Country: "FR", Plan: plan})
		if err != nil {
			return err
		}
		f.tenant, f.key = ct.Tenant, ct.APIKey
		for _, role := range model.Roles {
			email := role + "@" + slug + ".example"
			if _, err := n.eng.AdminCreateUser(context.Background(), slug, model.CreateUserInput{Email: email,
				Name: role, Role: role, Password: testPassword}); err != nil {
				return err
			}
			f.emails[role] = email
		}
		return nil
	}()
	if err != nil {
		n.t.Fatal(err)
	}
	return f
}

// login returns a bearer token for email.
func (n *node) login(email string) string {
	n.t.Helper()
	res := n.do("POST", "/v1/auth/login", map[string]any{"email": email, "password": testPassword})
	res.want(http.StatusOK)
	return "Bearer " + res.str("token")
}

// response is a decoded answer.
type response struct {
	t      testing.TB
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends a request; body is JSON-encoded unless it is a string or []byte. headers are
// name, value pairs.
func (n *node) do(method, path string, body any, headers ...string) *response {
	n.t.Helper()
	req := servertest.NewRequest(n.t, context.Background(), method, n.url+path, body, headers...)
	resp, err := n.client.Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	res := &response{t: n.t, status: resp.StatusCode, header: resp.Header, raw: raw}
	if err := json.Unmarshal(raw, &res.body); err != nil {
		n.t.Fatalf("%s %s: body is not a JSON object: %q", method, path, raw)
	}
	if id := res.str("request_id"); id == "" || id != resp.Header.Get("X-Request-Id") {
		n.t.Fatalf("%s %s: request_id %q in body, %q in header", method, path, id, resp.Header.Get("X-Request-Id"))
	}
	return res
}

func (r *response) want(status int) *response {
	r.t.Helper()
	if r.status != status {
		r.t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	return r
}

// wantErr checks the status, error code and (when given) the field.
func (r *response) wantErr(status int, code string, field ...string) *response {
	r.t.Helper()
	r.want(status)
	if r.str("error") != code {
		r.t.Fatalf("error %q, want %q: %s", r.str("error"), code, r.raw)
	}
	if r.str("message") == "" {
		r.t.Fatalf("error without a message: %s", r.raw)
	}
	if len(field) > 0 && r.str("field") != field[0] {
		r.t.Fatalf("field %q, want %q: %s", r.str("field"), field[0], r.raw)
	}
	return r
}

func (r *response) str(k string) string {
	s, _ := r.body[k].(string)
	return s
}

func (r *response) num(k string) float64 {
	f, _ := r.body[k].(float64)
	return f
}

// tenantAdmin is a company administrator of the tenant, for seeding it through the use
// cases that take a principal.
func tenantAdmin(tenantID string) model.Principal {
	return model.Principal{TenantID: tenantID, TenantActive: true, Role: model.RoleCompanyAdmin}
}
