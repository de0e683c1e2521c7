package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/docs"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The tests of this file hold docs/openapi.yaml against the router and the node: every
// route is documented and nothing else is, every example fits its schema, and real
// answers of the node fit the schema documented for their route and status.
//
// Schemas are checked by github.com/santhosh-tekuri/jsonschema/v6, a JSON Schema
// validator of draft 2020-12 (the dialect of OpenAPI 3.1) that passes the official test
// suite. For the tests, every object schema that lists its properties is made closed
// (unevaluatedProperties: false), so that a field the node answers but the document does
// not name fails too; the served document stays open to additive fields.

// apiDoc is the document, decoded once, with its compiled schemas.
type apiDoc struct {
	root map[string]any
	mu   sync.Mutex
	c    *jsonschema.Compiler
	sch  map[string]*jsonschema.Schema
}

const docURL = "https://fieldrelay.test/openapi.json"

var loadDoc = sync.OnceValues(func() (*apiDoc, error) {
	raw, err := docs.OpenAPIJSON()
	if err != nil {
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the document is not an object")
	}
	strict, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	closeObjects(strict)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, strict); err != nil {
		return nil, err
	}
	return &apiDoc{root: root, c: c, sch: map[string]*jsonschema.Schema{}}, nil
})

// closeObjects makes every schema object with properties closed.
func closeObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok && len(props) > 0 {
			_, a := v["additionalProperties"]
			_, u := v["unevaluatedProperties"]
			if !a && !u {
				v["unevaluatedProperties"] = false
			}
		}
		for _, x := range v {
			closeObjects(x)
		}
	case []any:
		for _, x := range v {
			closeObjects(x)
		}
	}
}

func mustDoc(t testing.TB) *apiDoc {
	t.Helper()
	d, err := loadDoc()
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	return d
}

// pointer escapes JSON pointer tokens.
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// at returns the value at a JSON pointer of the document and its real location: a $ref
// met on the way (a response, a parameter or an example by reference) is followed; the
// value found last is not.
func (d *apiDoc) at(ptr string) (any, string) {
	var v any = d.root
	cur := ""
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		if arr, ok := v.([]any); ok {
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(arr) {
				return nil, ""
			}
			v, cur = arr[i], cur+"/"+tok
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, ""
		}
		if _, here := m[tok]; !here {
			if v, cur = d.deref(v, cur); v == nil {
				return nil, ""
			}
			m, _ = v.(map[string]any)
		}
		x, ok := m[tok]
		if !ok {
			return nil, ""
		}
		v, cur = x, cur+pointer(tok)
	}
	return v, cur
}

// deref follows the $ref of v, if any, to its target.
func (d *apiDoc) deref(v any, cur string) (any, string) {
	for range 8 {
		m, ok := v.(map[string]any)
		if !ok {
			return v, cur
		}
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#/") {
			return v, cur
		}
		cur = strings.TrimPrefix(ref, "#")
		v = d.root
		for _, tok := range strings.Split(strings.TrimPrefix(cur, "/"), "/") {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
			mm, _ := v.(map[string]any)
			v = mm[tok]
		}
	}
	return v, cur
}

// schema compiles the schema at a JSON pointer of the document.
func (d *apiDoc) schema(ptr string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.sch[ptr]; ok {
		return s, nil
	}
	s, err := d.c.Compile(docURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	d.sch[ptr] = s
	return s, nil
}

// validate checks a JSON value against the schema at ptr.
func (d *apiDoc) validate(ptr string, raw []byte) error {
	s, err := d.schema(ptr)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// operation returns an operation's object and its pointer.
func (d *apiDoc) operation(method, template string) (map[string]any, string) {
	ptr := pointer("paths", template, strings.ToLower(method))
	op, _ := d.at(ptr)
	m, _ := op.(map[string]any)
	return m, ptr
}

// checkAnswer checks a real answer against the schema the document gives for its route and
// status: an undocumented status, or a body that does not fit, is an error.
func (d *apiDoc) checkAnswer(method, routePath string, status int, contentType string, raw []byte) error {
	template := openapiPath(routePath)
	op, ptr := d.operation(method, template)
	if op == nil {
		return fmt.Errorf("%s %s is not documented", method, template)
	}
	code := strconv.Itoa(status)
	resp, rptr := d.at(ptr + pointer("responses", code))
	if resp == nil {
		return fmt.Errorf("%s %s answered %d, which the document does not list: %s", method, template, status, clip(raw))
	}
	if !strings.HasPrefix(contentType, "application/json") {
		return nil
	}
	if _, sptr := d.at(rptr + pointer("content", "application/json", "schema")); sptr == "" {
		return fmt.Errorf("%s %s %d: no application/json schema documented", method, template, status)
	} else if err := d.validate(sptr, raw); err != nil {
		return fmt.Errorf("%s %s %d: the answer does not fit %s: %v\n%s", method, template, status, sptr, err, clip(raw))
	}
	return nil
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// openapiPath writes a router path as an OpenAPI path template: :id → {id}, *file → {file}.
func openapiPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/")
}

var methods = []string{"get", "head", "put", "post", "patch", "delete"}

// TestOpenAPI_CoversRouter: every route of the router is documented (path and method),
// the document has no operation the router lacks, public routes need no credentials in
// the document and the others do, and every path parameter is declared.
func TestOpenAPI_CoversRouter(t *testing.T) {
	d := mustDoc(t)
	n := newNode(t)
	documented := map[string]bool{}
	paths, _ := d.root["paths"].(map[string]any)
	for p, item := range paths {
		for _, m := range methods {
			if _, ok := item.(map[string]any)[m]; ok {
				documented[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	inRouter := map[string]bool{}
	for _, r := range server.Routes(n.srv) {
		k := r.Method + " " + openapiPath(r.Path)
		inRouter[k] = true
		// A catch-all also serves its empty value (/console/*file serves /console/), which
		// an OpenAPI path parameter cannot be: that path is documented on its own.
		if i := strings.Index(r.Path, "/*"); i >= 0 {
			page := r.Method + " " + r.Path[:i+1]
			inRouter[page] = true
			if !documented[page] {
				t.Errorf("%s (the empty value of %s) is not in docs/openapi.yaml", page, r.Path)
			}
		}
		if !documented[k] {
			t.Errorf("%s %s is in the router but not in docs/openapi.yaml", r.Method, r.Path)
			continue
		}
		op, _ := d.operation(r.Method, openapiPath(r.Path))
		sec, hasSec := op["security"].([]any)
		open := hasSec && len(sec) == 0
		switch {
		case r.Path == "/metrics": // guarded by the internal secret, not by credentials
			if !hasSec || len(sec) != 1 || sec[0].(map[string]any)["internal"] == nil {
				t.Errorf("GET /metrics: security must be the internal secret")
			}
		case r.Public && !open:
			t.Errorf("%s %s is public: its operation needs `security: []`", r.Method, r.Path)
		case !r.Public && open:
			t.Errorf("%s %s needs credentials, but the document says none", r.Method, r.Path)
		}
		if _, ok := op["x-permission"]; !ok {
			t.Errorf("%s %s: no x-permission", r.Method, r.Path)
		}
		checkPathParams(t, d, r.Method, openapiPath(r.Path))
	}
	for k := range documented {
		if !inRouter[k] {
			t.Errorf("%s is in docs/openapi.yaml but not in the router", k)
		}
	}
}

var paramRE = regexp.MustCompile(`\{([^}]+)\}`)

// checkPathParams: each {name} of a path template is a declared path parameter.
func checkPathParams(t *testing.T, d *apiDoc, method, template string) {
	t.Helper()
	declared := map[string]bool{}
	for _, ptr := range []string{pointer("paths", template, "parameters"), pointer("paths", template, strings.ToLower(method), "parameters")} {
		list, _ := d.at(ptr)
		for i := range asSlice(list) {
			p, pp := d.at(ptr + "/" + strconv.Itoa(i))
			p, _ = d.deref(p, pp)
			if m, ok := p.(map[string]any); ok && m["in"] == "path" {
				declared[m["name"].(string)] = true
			}
		}
	}
	for _, m := range paramRE.FindAllStringSubmatch(template, -1) {
		if !declared[m[1]] {
			t.Errorf("%s %s: path parameter %s is not declared", method, template, m[1])
		}
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// TestOpenAPI_ExamplesFitTheirSchemas validates every example of the document: those of
// request and response bodies (inline or by $ref) against the body's schema, and those of
// component schemas against the schema.
func TestOpenAPI_ExamplesFitTheirSchemas(t *testing.T) {
	d := mustDoc(t)
	count := 0
	var walk func(v any, ptr string)
	walk = func(v any, ptr string) {
		switch v := v.(type) {
		case map[string]any:
			if _, isMedia := v["schema"]; isMedia && strings.Contains(ptr, "/content/") {
				_, sptr := d.at(ptr + "/schema")
				check := func(name string, ex any, exPtr string) {
					count++
					raw := jsonOf(t, ex)
					if err := d.validate(sptr, raw); err != nil {
						t.Errorf("example %s does not fit %s: %v", exPtr, sptr, err)
					}
				}
				if ex, ok := v["example"]; ok {
					check("example", ex, ptr+"/example")
				}
				if exs, ok := v["examples"].(map[string]any); ok {
					for name := range exs {
						exPtr := ptr + pointer("examples", name)
						val, _ := d.at(exPtr + "/value")
						if val == nil {
							t.Errorf("example %s has no value", exPtr)
							continue
						}
						check(name, val, exPtr)
					}
				}
			}
			for k, x := range v {
				walk(x, ptr+pointer(k))
			}
		case []any:
			for i, x := range v {
				walk(x, ptr+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(d.root["paths"], "/paths")
	walk(d.root["components"].(map[string]any)["responses"], "/components/responses")
	schemas := d.root["components"].(map[string]any)["schemas"].(map[string]any)
	names := make([]string, 0, len(schemas))
	for name := range schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := schemas[name].(map[string]any)
		for i, ex := range asSlice(s["examples"]) {
			count++
			if err := d.validate(pointer("components", "schemas", name), jsonOf(t, ex)); err != nil {
				t.Errorf("example %d of schema %s: %v", i, name, err)
			}
		}
	}
	if count < 40 {
		t.Fatalf("only %d examples were checked", count)
	}
	t.Logf("%d examples checked against their schemas", count)
}

// TestOpenAPI_Served: GET /v1/openapi.json answers the document to anyone: the JSON of
// docs/openapi.yaml and nothing added (the request id is in X-Request-Id only: an OpenAPI
// document has no request_id field), which kin-openapi loads and validates.
func TestOpenAPI_Served(t *testing.T) {
	n := newNode(t)
	got := callRaw(t, n, "GET", "/v1/openapi.json", nil)
	want, _ := docs.OpenAPIJSON()
	if got.status != http.StatusOK || !bytes.Equal(bytes.TrimSuffix(got.raw, []byte("\n")), want) {
		t.Fatalf("%d, not docs/openapi.yaml as it is: %s", got.status, clip(got.raw))
	}
	if id := got.header.Get("X-Request-Id"); !uuidRE.MatchString(id) {
		t.Fatalf("X-Request-Id %q", id)
	}
	if err := mustDoc(t).checkAnswer("GET", "/v1/openapi.json", got.status, got.contentType, got.raw); err != nil {
		t.Fatal(err)
	}
	if err := loadKinDoc(t, n).check(t, kinRequest(t, "GET", "/v1/openapi.json", nil, nil), false, got); err != nil {
		t.Fatal(err)
	}
	// Concurrent answers share the document's bytes and never write into them (-race).
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if again := callRaw(t, n, "GET", "/v1/openapi.json", nil); !bytes.Equal(again.raw, got.raw) {
				t.Error("concurrent answers differ")
			}
		})
	}
	wg.Wait()
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestOpenAPI_RealAnswersFitTheDocument drives the node through the main records, their
// errors and the router's own answers (404 of an unknown path, 405), and checks each
// request and answer twice: the answer against the closed schema documented for its route
// and status (checkAnswer), and both with kin-openapi's openapi3filter (kinDoc.check). A
// case marked refused is a request the node turns down for its shape, which the document
// must refuse too.
func TestOpenAPI_RealAnswersFitTheDocument(t *testing.T) {
	w := newMatrixWorld(t)
	n, fx, d := w.n, w.fx, mustDoc(t)
	k := loadKinDoc(t, n)
	key := []string{"x-svc-api-key", w.a.key}
	admin := w.caller("role company_admin").header
	op := w.opHeader

	// Records the cases act on: an available team and an event to dispatch it to, a key
	// to rotate and revoke, a zone and a webhook to delete, and a starter tenant whose
	// window of 500 requests is spent.
	teamC := n.do("POST", "/v1/teams", map[string]any{"name": "Charlie", "verticals": []string{"emergency"},
		"members": []any{map[string]any{"name": "Cy", "phone": "+33600000003", "lat": 48.9, "lng": 2.3}}}, key...).
		want(http.StatusCreated).str("id")
	eventC := n.do("POST", "/v1/events", eventBody("real-c"), key...).want(http.StatusCreated).str("event_id")
	spareKey := n.do("POST", "/v1/tenant/api-keys", map[string]any{"name": "spare", "scopes": []string{"events:read"}}, key...).
		want(http.StatusCreated).obj("key")["id"].(string)
	n.do("POST", "/v1/zones", zoneBody("south"), key...).want(http.StatusCreated)
	hook := n.do("POST", "/v1/webhooks", map[string]any{"url": "https://93.184.216.34/gone"}, key...).want(http.StatusCreated).str("id")
	small := n.addTenant("small", "starter")
	for range 500 {
		if a := callRaw(t, n, "GET", "/v1/tenant/me", nil, "x-svc-api-key", small.key); a.status != http.StatusOK {
			t.Fatalf("filling the window: %d", a.status)
		}
	}

	cases := []struct {
		method, route, path string
		body                any
		headers             []string
		status              int
		refused             bool
	}{
		// health, the document, auth
		{"GET", "/healthz", "/healthz", nil, nil, 200, false},
		{"GET", "/readyz", "/readyz", nil, nil, 503, false},
		{"GET", "/v1/openapi.json", "/v1/openapi.json", nil, nil, 200, false},
		{"POST", "/v1/auth/login", "/v1/auth/login", map[string]any{"email": w.a.emails["api_user"], "password": testPassword}, nil, 200, false},
		{"POST", "/v1/auth/login", "/v1/auth/login", map[string]any{"email": w.a.emails["api_user"], "password": "not the password"}, nil, 401, false},
		{"POST", "/v1/auth/forgot-password", "/v1/auth/forgot-password", map[string]any{"email": "nobody@x.example"}, nil, 202, false},
		// tenant
		{"GET", "/v1/tenant/me", "/v1/tenant/me", nil, key, 200, false},
		{"GET", "/v1/tenant/me", "/v1/tenant/me", nil, admin, 200, false},
		{"PATCH", "/v1/tenant/dispatch-settings", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_threshold": 0.3}, key, 200, false},
		{"PATCH", "/v1/tenant/dispatch-settings", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_threshold": 2}, key, 400, true},
		{"GET", "/v1/tenant/usage", "/v1/tenant/usage", nil, key, 200, false},
		{"GET", "/v1/tenant/billing", "/v1/tenant/billing", nil, admin, 200, false},
		{"GET", "/v1/tenant/users", "/v1/tenant/users", nil, admin, 200, false},
		{"POST", "/v1/tenant/users", "/v1/tenant/users", map[string]any{"email": "new@acme.example", "name": "New", "role": "api_user",
			"password": testPassword}, admin, 201, false},
		{"PATCH", "/v1/tenant/users/:id", "/v1/tenant/users/" + fx.user, map[string]any{"name": "Renamed"}, admin, 200, false},
		{"GET", "/v1/tenant/api-keys", "/v1/tenant/api-keys", nil, key, 200, false},
		{"POST", "/v1/tenant/api-keys", "/v1/tenant/api-keys", map[string]any{"name": "gw", "scopes": []string{"events:read"}}, key, 201, false},
		{"POST", "/v1/tenant/api-keys/rotate", "/v1/tenant/api-keys/rotate", map[string]any{"key_id": spareKey, "grace_period_minutes": 60}, key, 200, false},
		{"DELETE", "/v1/tenant/api-keys/:id", "/v1/tenant/api-keys/" + spareKey, nil, key, 200, false},
		{"GET", "/v1/tenant/upstream/status", "/v1/tenant/upstream/status", nil, admin, 200, false},
		// events
		{"POST", "/v1/events", "/v1/events", eventBody("real-1"), key, 201, false},
		{"POST", "/v1/events", "/v1/events", eventBody("real-1"), key, 201, false}, // a replay
		{"GET", "/v1/events", "/v1/events?limit=2", nil, key, 200, false},
		{"GET", "/v1/events", "/v1/events?vertical=emergency&status=pending&priority=high&since=2026-06-09T00:00:00.000Z&until=2026-06-10T00:00:00.000Z",
			nil, key, 200, false},
		{"GET", "/v1/events/:id", "/v1/events/" + fx.event, nil, key, 200, false},
		{"GET", "/v1/parsers", "/v1/parsers", nil, key, 200, false},
		// zones and connectivity
		{"GET", "/v1/zones", "/v1/zones", nil, key, 200, false},
		{"GET", "/v1/tenant/zones", "/v1/tenant/zones", nil, key, 200, false},
		{"GET", "/v1/zones/:code", "/v1/zones/" + fx.zone, nil, key, 200, false},
		{"POST", "/v1/zones", "/v1/zones", zoneBody("east"), key, 201, false},
		{"PATCH", "/v1/zones/:code", "/v1/zones/east", map[string]any{"name": "East"}, key, 200, false},
		{"DELETE", "/v1/zones/:code", "/v1/zones/south", nil, key, 200, false},
		{"GET", "/v1/connectivity/status", "/v1/connectivity/status", nil, key, 200, false},
		{"POST", "/v1/connectivity/report", "/v1/connectivity/report", map[string]any{"zone_code": fx.zone, "state": "degraded",
			"signal_dbm": -97, "network": "3g"}, key, 200, false},
		{"GET", "/v1/connectivity/status", "/v1/connectivity/status?zone_code=" + fx.zone, nil, key, 200, false},
		// teams, dispatch, missions
		{"GET", "/v1/teams", "/v1/teams", nil, key, 200, false},
		{"GET", "/v1/teams/:id", "/v1/teams/" + fx.teamA, nil, key, 200, false},
		{"POST", "/v1/teams", "/v1/teams", map[string]any{"name": "Delta", "verticals": []string{"emergency"}, "equipment": []string{"ladder"}},
			key, 201, false},
		{"PATCH", "/v1/teams/:id", "/v1/teams/" + fx.teamB, map[string]any{"name": "Bravo 2"}, key, 200, false},
		{"POST", "/v1/teams/:id/members", "/v1/teams/" + fx.teamB + "/members", map[string]any{"name": "Bea", "phone": "+33600000004"}, key, 201, false},
		{"PATCH", "/v1/teams/:id/members/:memberId/location", "/v1/teams/" + fx.teamA + "/members/" + fx.memberOp + "/location",
			map[string]any{"lat": 45.0, "lng": 4.0}, op, 200, false},
		{"POST", "/v1/teams/dispatch/score", "/v1/teams/dispatch/score", map[string]any{"event_id": fx.event}, key, 200, false},
		{"POST", "/v1/teams/dispatch", "/v1/teams/dispatch", map[string]any{"event_id": eventC, "team_id": teamC, "notes": "gate B"},
			admin, 201, false},
		{"GET", "/v1/missions", "/v1/missions", nil, key, 200, false},
		{"GET", "/v1/missions", "/v1/missions?status=ACK&team_id=" + fx.teamB + "&limit=10", nil, key, 200, false},
		{"GET", "/v1/missions/:id", "/v1/missions/" + fx.missionA, nil, key, 200, false},
		{"PATCH", "/v1/missions/:id/status", "/v1/missions/" + fx.missionB + "/status",
			map[string]any{"status": "ACK", "feedback": map[string]any{"eta_min": 7}}, key, 200, false},
		// webhooks
		{"POST", "/v1/webhooks", "/v1/webhooks", map[string]any{"url": "https://93.184.216.34/hook", "events": []string{"mission.*"}}, key, 201, false},
		{"GET", "/v1/webhooks", "/v1/webhooks", nil, key, 200, false},
		{"GET", "/v1/webhooks/:id", "/v1/webhooks/" + fx.webhook, nil, key, 200, false},
		{"GET", "/v1/webhooks/:id/deliveries", "/v1/webhooks/" + fx.webhook + "/deliveries", nil, key, 200, false},
		{"PATCH", "/v1/webhooks/:id", "/v1/webhooks/" + fx.webhook, map[string]any{"enabled": true}, key, 200, false},
		{"POST", "/v1/webhooks/:id/test", "/v1/webhooks/" + fx.webhook + "/test", nil, key, 202, false},
		{"DELETE", "/v1/webhooks/:id", "/v1/webhooks/" + hook, nil, key, 200, false},
		// offline sync, devices, SMS
		{"POST", "/v1/sync/batch", "/v1/sync/batch", syncBatch(syncItem("real-2"), syncItem("matrix-3")), key, 200, false},
		{"GET", "/v1/sync/status", "/v1/sync/status?batch_id=" + fx.batch, nil, key, 200, false},
		{"POST", "/v1/devices/register", "/v1/devices/register", map[string]any{"name": "tablet C", "platform": "android",
			"hardware_id": "hw-c"}, key, 201, false},
		{"POST", "/v1/devices/register", "/v1/devices/register", map[string]any{"name": "tablet C", "platform": "android",
			"hardware_id": "hw-c"}, key, 200, false}, // the same hardware
		{"GET", "/v1/devices/:id/queue", "/v1/devices/" + fx.deviceA + "/queue", nil, key, 200, false},
		{"POST", "/v1/devices/sync", "/v1/devices/sync", map[string]any{"device_id": fx.deviceA, "ack_through": 0,
			"items": []any{map[string]any{"sequence_number": 1, "kind": "location", "captured_at": "2026-06-09T10:00:00.000Z",
				"payload": map[string]any{"member_id": fx.memberOp, "lat": 45.0, "lng": 4.0}}}}, key, 200, false},
		{"POST", "/v1/sms/inbound", "/v1/sms/inbound", map[string]any{"from": "+33600000001", "body": "FR1 ACK " + fx.codeA},
			[]string{"x-svc-api-key", n.keyWith(w.a, mSMSInbound)}, 200, false},

		// errors: the envelope, with the status and code the document gives the route
		{"GET", "/v1/events/:id", "/v1/events/" + fx.missionA, nil, key, 404, false},
		{"GET", "/v1/events", "/v1/events?limit=0", nil, key, 400, true},
		{"GET", "/v1/events", "/v1/events?status=lost", nil, key, 400, true},
		{"GET", "/v1/events", "/v1/events", nil, nil, 401, true},
		{"GET", "/v1/events", "/v1/events", nil, []string{"x-svc-api-key", "fr_live_00000000000000000000000000000000"}, 401, false},
		{"POST", "/v1/events", "/v1/events", `{"type":`, key, 400, true},
		{"POST", "/v1/events", "/v1/events", map[string]any{"type": "FIRE", "vertical": "emergency", "idempotency_key": "real-3"}, key, 400, true},
		{"POST", "/v1/events", "/v1/events", `{}`, []string{"x-svc-api-key", w.a.key, "Content-Type", "text/plain"}, 415, true},
		{"DELETE", "", "/v1/events", nil, key, 405, false},
		{"GET", "", "/v1/nothing-here", nil, key, 404, false},
		{"GET", "/v1/tenant/me", "/v1/tenant/me", nil, []string{"x-svc-api-key", small.key}, 429, false},
		{"POST", "/v1/teams/dispatch", "/v1/teams/dispatch", map[string]any{"event_id": fx.event}, op, 403, true},
		{"POST", "/v1/teams/dispatch", "/v1/teams/dispatch", map[string]any{"event_id": fx.event, "team_id": fx.teamA}, key, 409, false},
		{"PATCH", "/v1/missions/:id/status", "/v1/missions/" + fx.missionB + "/status",
			map[string]any{"status": "COMPLETED"}, key, 409, false},
		// Every mission state is a status the document reads; SENT, set by the system alone,
		// is refused by the lifecycle (409), not by the document.
		{"PATCH", "/v1/missions/:id/status", "/v1/missions/" + fx.missionB + "/status",
			map[string]any{"status": "SENT"}, key, 409, false},
		{"GET", "/v1/missions", "/v1/missions?status=LOST", nil, key, 400, true},
		{"POST", "/v1/webhooks", "/v1/webhooks", map[string]any{"url": "http://93.184.216.34/hook"}, key, 400, true},
		{"POST", "/v1/sync/batch", "/v1/sync/batch", syncBatch(syncItem("real-4")), admin, 403, true},
	}
	for _, tc := range cases {
		got := callRaw(t, n, tc.method, tc.path, tc.body, tc.headers...)
		if got.status != tc.status {
			t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.path, got.status, tc.status, clip(got.raw))
			continue
		}
		if tc.route != "" {
			if err := d.checkAnswer(tc.method, tc.route, got.status, got.contentType, got.raw); err != nil {
				t.Error(err)
			}
		}
		if err := k.check(t, kinRequest(t, tc.method, tc.path, tc.body, tc.headers), tc.refused, got); err != nil {
			t.Errorf("kin-openapi: %v", err)
		}
	}
}
