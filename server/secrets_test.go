package server_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/server"
)

// Answers that carry a secret (docs/decisions/0132-secret-answers.md):
// the routes the route table marks secret
// answer Cache-Control: no-store and Pragma: no-cache, errors included; every answer
// carries X-Content-Type-Options: nosniff. Three guards keep a new route with a secret from
// forgetting the mark: the table of secret routes below must be exactly the marked routes,
// each of its requests must really get a secret, and every operation whose documented
// answer holds a secret-looking field must be marked.

// secretRequest gets a route's answer with its secret, and names where the secret is: a
// field of the JSON body, or the session cookie.
type secretRequest struct {
	path   string
	body   any
	header func() []string
	status int
	field  string // "" for the session cookie; "*name" for a field at any depth
}

func TestSecretAnswers_Headers(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "mission-critical")
	key := func() []string { return []string{"x-svc-api-key", f.key} }
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	bearer := func() []string { return admin }
	device := n.do("POST", "/v1/devices/register", map[string]any{"name": "tablet", "platform": "android",
		"hardware_id": "hw-secret"}, key()...).want(http.StatusCreated).str("device_id")
	node := n.do("POST", "/v1/devices/register", map[string]any{"name": "site node", "platform": "fieldrelay-node",
		"hardware_id": "node-secret"}, key()...).want(http.StatusCreated).str("device_id")
	var session string // the cookie POST /v1/auth/session sets, for POST /v1/auth/refresh
	secretRoutes := []struct {
		route string
		req   secretRequest
	}{
		{"POST /v1/auth/login", secretRequest{path: "/v1/auth/login", status: 200, field: "token",
			body: map[string]any{"email": f.emails["api_user"], "password": testPassword}}},
		{"POST /v1/auth/session", secretRequest{path: "/v1/auth/session", status: 200, header: bearer, body: map[string]any{}}},
		{"POST /v1/auth/refresh", secretRequest{path: "/v1/auth/refresh", status: 200, field: "token",
			header: func() []string { return []string{"Cookie", session} }}},
		{"POST /v1/tenant/api-keys", secretRequest{path: "/v1/tenant/api-keys", status: 201, field: "api_key", header: key,
			body: map[string]any{"name": "gw", "scopes": []string{"events:read"}}}},
		{"POST /v1/tenant/api-keys/rotate", secretRequest{path: "/v1/tenant/api-keys/rotate", status: 200, field: "api_key",
			header: key, body: map[string]any{"grace_period_minutes": 60}}},
		{"POST /v1/devices/:id/credential", secretRequest{path: "/v1/devices/" + device + "/credential", status: 201,
			field: "credential", header: bearer}},
		{"POST /v1/devices/downstream", secretRequest{path: "/v1/devices/downstream", status: 200, field: "*password_hash",
			header: key, body: map[string]any{"device_id": node, "after": 0}}},
		{"POST /v1/webhooks", secretRequest{path: "/v1/webhooks", status: 201, field: "secret", header: key,
			body: map[string]any{"url": "https://93.184.216.34/hook"}}},
	}

	// The marked routes are exactly these.
	want := map[string]bool{}
	for _, s := range secretRoutes {
		want[s.route] = true
	}
	for _, r := range server.Routes(n.srv) {
		k := routeKey(r.Method, r.Path)
		switch {
		case r.Secret && !want[k]:
			t.Errorf("%s is marked secret but is not in this test's table: add the request that gets its secret", k)
		case !r.Secret && want[k]:
			t.Errorf("%s answers a secret but its route is not marked secret (routes.go)", k)
		}
		delete(want, k)
	}
	for k := range want {
		t.Errorf("%s is not a route", k)
	}

	for _, s := range secretRoutes {
		t.Run(strings.ReplaceAll(s.route, "/", "_"), func(t *testing.T) {
			var h []string
			if s.req.header != nil {
				h = s.req.header()
			}
			method, _, _ := strings.Cut(s.route, " ")
			got := callRaw(t, n, method, s.req.path, s.req.body, h...)
			if got.status != s.req.status {
				t.Fatalf("%d, want %d: %s", got.status, s.req.status, got.raw)
			}
			// It is a secret the answer carries.
			if s.req.field == "" {
				for _, c := range (&http.Response{Header: got.header}).Cookies() {
					if c.Name == "fieldrelay_session" && c.Value != "" {
						session = c.Name + "=" + c.Value
					}
				}
				if session == "" {
					t.Fatalf("no session cookie: %v", got.header)
				}
			} else if name, deep := strings.CutPrefix(s.req.field, "*"); deep {
				if !regexp.MustCompile(`"` + name + `":"[^"]{20,}"`).Match(got.raw) {
					t.Fatalf("no %s in the answer: %s", name, got.raw)
				}
			} else {
				var body map[string]any
				_ = json.Unmarshal(got.raw, &body)
				if v, _ := body[s.req.field].(string); len(v) < 20 {
					t.Fatalf("no %s in the answer: %s", s.req.field, got.raw)
				}
			}
			wantNoStore(t, "the answer", got.header)
			// Its errors too (no credentials or a body that is no JSON object).
			bad := callRaw(t, n, method, s.req.path, "[")
			if bad.status < 400 {
				t.Fatalf("a bad request answered %d", bad.status)
			}
			wantNoStore(t, "an error", bad.header)
		})
	}
}

// wantNoStore checks the headers of an answer that carries a secret.
func wantNoStore(t *testing.T, what string, h http.Header) {
	t.Helper()
	if h.Get("Cache-Control") != "no-store" || h.Get("Pragma") != "no-cache" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("%s: Cache-Control %q, Pragma %q, X-Content-Type-Options %q", what, h.Get("Cache-Control"),
			h.Get("Pragma"), h.Get("X-Content-Type-Options"))
	}
}

// TestSecretAnswers_NosniffEverywhere: every route answers X-Content-Type-Options: nosniff
// (here without credentials: errors, pages, redirects, health), and so do the router's
// own 404 and 405; over plain HTTP there is no Strict-Transport-Security.
func TestSecretAnswers_NosniffEverywhere(t *testing.T) {
	n := newNode(t)
	param := regexp.MustCompile(`/[:*][^/]*`)
	for _, r := range server.Routes(n.srv) {
		path := param.ReplaceAllString(r.Path, "/0190a000-0000-7000-8000-000000000001")
		if strings.HasSuffix(r.Path, "/*file") {
			path = strings.TrimSuffix(r.Path, "*file")
		}
		got := callRaw(t, n, r.Method, path, nil)
		if got.header.Get("X-Content-Type-Options") != "nosniff" || got.header.Get("Strict-Transport-Security") != "" {
			t.Errorf("%s %s: %d, X-Content-Type-Options %q, Strict-Transport-Security %q", r.Method, path, got.status,
				got.header.Get("X-Content-Type-Options"), got.header.Get("Strict-Transport-Security"))
		}
		if !r.Secret && got.header.Get("Cache-Control") == "no-store" && r.Path != "/v1/stream" {
			t.Errorf("%s %s: no-store on a route that is not marked secret", r.Method, path)
		}
	}
	for _, c := range []struct{ method, path string }{{"GET", "/v1/nothing-here"}, {"DELETE", "/v1/events"}} {
		if got := callRaw(t, n, c.method, c.path, nil); got.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: %d without nosniff", c.method, c.path, got.status)
		}
	}
}

// secretName is a field name that holds a secret, or its hash (api_key_prefix, token_kind or
// password_changed do not).
var secretName = regexp.MustCompile(`(^|_)(token|secret|password|credential|api_key)(_hash)?$`)

// TestSecretAnswers_Documented: an operation of docs/openapi.yaml whose answer holds a
// string field named like a secret (token, secret, password, credential, api_key) or sets a
// cookie is a route marked secret, and the other way round; and each marked route
// documents Cache-Control and Pragma on its successful answers. A new route that answers a
// secret, documented as every route must be (TestOpenAPI_CoversRouter), cannot forget the
// mark.
func TestSecretAnswers_Documented(t *testing.T) {
	d := mustDoc(t)
	n := newNode(t)
	paths, _ := d.root["paths"].(map[string]any)
	for _, r := range server.Routes(n.srv) {
		template := openapiPath(r.Path)
		if _, ok := paths[template]; !ok {
			continue // TestOpenAPI_CoversRouter reports it
		}
		op, ptr := d.operation(r.Method, template)
		responses, _ := op["responses"].(map[string]any)
		var found []string
		for _, code := range slices.Sorted(mapKeys(responses)) {
			resp, rptr := d.deref(responses[code], ptr+pointer("responses", code))
			rm, _ := resp.(map[string]any)
			headers, _ := rm["headers"].(map[string]any)
			if _, ok := headers["Set-Cookie"]; ok {
				found = append(found, code+" Set-Cookie")
			}
			if schema, sptr := d.at(rptr + pointer("content", "application/json", "schema")); schema != nil {
				for _, f := range secretFields(d, schema, sptr, map[string]bool{}) {
					found = append(found, code+" "+f)
				}
			}
			if r.Secret && strings.HasPrefix(code, "2") {
				if headers["Cache-Control"] == nil || headers["Pragma"] == nil {
					t.Errorf("%s %s %s: Cache-Control and Pragma are not documented", r.Method, template, code)
				}
			}
		}
		switch {
		case len(found) > 0 && !r.Secret:
			t.Errorf("%s %s answers %v, which looks like a secret, but its route is not marked secret (routes.go)",
				r.Method, r.Path, found)
		case len(found) == 0 && r.Secret:
			t.Errorf("%s %s is marked secret but its documented answers hold no secret", r.Method, r.Path)
		}
	}
}

// secretFields lists the string fields named like a secret anywhere in the schema v (at
// cur), following $ref, properties, items and the combinators.
func secretFields(d *apiDoc, v any, cur string, seen map[string]bool) []string {
	v, cur = d.deref(v, cur)
	if seen[cur] {
		return nil
	}
	seen[cur] = true
	m, _ := v.(map[string]any)
	var out []string
	props, _ := m["properties"].(map[string]any)
	for _, name := range slices.Sorted(mapKeys(props)) {
		p, pcur := d.deref(props[name], cur+pointer("properties", name))
		if secretName.MatchString(name) && hasType(p, "string") {
			out = append(out, name)
		}
		out = append(out, secretFields(d, p, pcur, seen)...)
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if x, ok := m[k].(map[string]any); ok {
			out = append(out, secretFields(d, x, cur+pointer(k), seen)...)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		for i, x := range asSlice(m[k]) {
			out = append(out, secretFields(d, x, cur+pointer(k, strconv.Itoa(i)), seen)...)
		}
	}
	return out
}

// hasType reports whether a schema admits the JSON type t.
func hasType(v any, t string) bool {
	m, _ := v.(map[string]any)
	switch ty := m["type"].(type) {
	case string:
		return ty == t
	case []any:
		return slices.Contains(ty, any(t))
	}
	return false
}
