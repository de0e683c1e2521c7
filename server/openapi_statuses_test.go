package server_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/server"
)

// badRequest is one request meant to fail on a route: a query, a body, a header or a path
// parameter that the route should refuse (or, where it reads nothing of the kind, ignore).
type badRequest struct {
	name    string
	path    string
	body    any
	headers []string
}

// badRequests derives a route's bad requests from its probe of the authorization matrix
// (matrixProbes), so that every route of the router gets them: a bad `limit` (0, not a
// number) and `cursor` on every route (in place of the probe's query), a malformed body, a body of another media type
// and an idempotency key over 255 characters on every write, and ids that name nothing.
func badRequests(route server.RouteInfo, pr probe) []badRequest {
	// The query replaces the probe's own (GET /v1/connectivity/status?zone_code= is one
	// zone; the list, which pages, has none).
	bare, _, _ := strings.Cut(pr.path, "?")
	out := []badRequest{
		{name: "limit=0", path: bare + "?limit=0", body: pr.body},
		{name: "limit=many", path: bare + "?limit=many", body: pr.body},
		{name: "cursor=@@", path: bare + "?cursor=%40%40", body: pr.body},
	}
	switch route.Method {
	case "POST", "PATCH", "PUT", "DELETE":
		out = append(out,
			badRequest{name: "malformed JSON", path: pr.path, body: `{"name":`},
			badRequest{name: "text/plain", path: pr.path, body: `{}`, headers: []string{"Content-Type", "text/plain"}},
			badRequest{name: "a 256-character Idempotency-Key", path: pr.path, body: pr.body,
				headers: []string{"Idempotency-Key", strings.Repeat("k", 256)}})
	}
	if strings.Contains(route.Path, "/:") || strings.Contains(route.Path, "/*") {
		segs := strings.Split(route.Path, "/")
		for i, s := range segs {
			if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
				segs[i] = "no-such-" + s[1:]
			}
		}
		out = append(out, badRequest{name: "ids that name nothing", path: strings.Join(segs, "/"), body: pr.body})
	}
	return out
}

// allowedCaller is a caller the route lets through (tenant A's company_admin when it may,
// else the first of the matrix's callers that may; nobody on a public route).
func (w *matrixWorld) allowedCaller(rule access) (caller, bool) {
	if rule.public {
		return w.caller("nobody"), true
	}
	for _, c := range append([]caller{w.caller("role company_admin")}, w.callers...) {
		if c.header != nil && rule.check(c).allow {
			return c, true
		}
	}
	return caller{}, false
}

// queryParams returns the query parameters an operation declares (its own and its path's).
func (d *apiDoc) queryParams(method, template string) map[string]bool {
	out := map[string]bool{}
	for _, ptr := range []string{pointer("paths", template, "parameters"), pointer("paths", template, strings.ToLower(method), "parameters")} {
		list, _ := d.at(ptr)
		for i := range asSlice(list) {
			p, pp := d.at(ptr + "/" + strconv.Itoa(i))
			p, _ = d.deref(p, pp)
			if m, ok := p.(map[string]any); ok && m["in"] == "query" {
				out[m["name"].(string)] = true
			}
		}
	}
	return out
}

// TestOpenAPI_BadRequestsAnswerDocumentedStatuses sends every route of the router bad
// requests (badRequests) as a caller the route lets through, and holds each answer to the
// served document: its status is one the operation lists, its body fits the schema
// documented for it (the error envelope for an error), checked by the closed schemas of
// openapi_test.go and by kin-openapi. A route whose document lists no status it answers
// (or that the document lacks) fails here. Paging is held both ways: a route that lists
// `limit` and `cursor` refuses limit=0 and a cursor that does not decode with 400
// validation_error naming the parameter, and a route that refuses them lists them.
func TestOpenAPI_BadRequestsAnswerDocumentedStatuses(t *testing.T) {
	w := newMatrixWorld(t)
	n, d := w.n, mustDoc(t)
	k := loadKinDoc(t, n)
	probes := matrixProbes(w.fx)

	// The check itself: a status the operation does not list is an error.
	if err := d.checkAnswer("GET", "/v1/webhooks", http.StatusTeapot, "application/json",
		[]byte(`{"error":"x","message":"x","request_id":"0190a3c4-5e6f-7a01-8b2c-3d4e5f607182"}`)); err == nil {
		t.Fatal("an undocumented status passes checkAnswer")
	}

	kinSeen := map[string]bool{}
	requests := 0
	for _, r := range server.Routes(n.srv) {
		key := routeKey(r.Method, r.Path)
		rule, ok := matrixRoutes[key]
		pr, probed := probes[key]
		if !ok || !probed {
			t.Errorf("%s: no entry in the authorization matrix (matrixRoutes, matrixProbes)", key)
			continue
		}
		c, ok := w.allowedCaller(rule)
		if !ok {
			t.Errorf("%s: no caller of the matrix is let through", key)
			continue
		}
		template := openapiPath(r.Path)
		if op, _ := d.operation(r.Method, template); op == nil {
			t.Errorf("%s %s is not in docs/openapi.yaml", r.Method, template)
			continue
		}
		// The probe without its query: what the paging queries are compared with.
		bare, _, _ := strings.Cut(pr.path, "?")
		base := call(t, n, r.Method, bare, pr.body, c.header...)
		params := d.queryParams(r.Method, template)
		for _, br := range badRequests(r, pr) {
			headers := append(append([]string{}, c.header...), br.headers...)
			got := callRaw(t, n, r.Method, br.path, br.body, headers...)
			requests++
			what := key + " with " + br.name + " as " + c.name
			if err := d.checkAnswer(r.Method, r.Path, got.status, got.contentType, got.raw); err != nil {
				t.Errorf("%s: %v", what, err)
			}
			if got.status >= 400 && (!strings.HasPrefix(got.contentType, "application/json") || got.code == "") {
				t.Errorf("%s: %d is not the error envelope: %q %s", what, got.status, got.contentType, clip(got.raw))
			}
			if kk := key + " " + strconv.Itoa(got.status) + " " + got.code; !kinSeen[kk] {
				kinSeen[kk] = true
				if err := k.checkAnswer(t, kinRequest(t, r.Method, br.path, br.body, headers), got); err != nil {
					t.Errorf("%s: kin-openapi: %v", what, err)
				}
			}
			// Paging, both ways, on a route whose probe itself succeeds.
			param := map[string]string{"limit=0": "limit", "limit=many": "limit", "cursor=@@": "cursor"}[br.name]
			if param == "" || base.status >= 300 {
				continue
			}
			refused := got.status == http.StatusBadRequest && got.code == "validation_error" && fieldOf(got.raw) == param
			switch {
			case params[param] && !refused:
				t.Errorf("%s: %d %s (%s), but the operation lists `%s`: want 400 validation_error on %s",
					what, got.status, got.code, got.message, param, param)
			case !params[param] && refused:
				t.Errorf("%s: 400 on `%s`, which the operation does not list", what, param)
			}
		}
	}
	t.Logf("%d bad requests on %d routes", requests, len(server.Routes(n.srv)))
}

var fieldRE = regexp.MustCompile(`"field":"([^"]*)"`)

// fieldOf returns the field of an error envelope.
func fieldOf(raw []byte) string {
	if m := fieldRE.FindSubmatch(raw); m != nil {
		return string(m[1])
	}
	return ""
}
