package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// kin-openapi (github.com/getkin/kin-openapi) reads the API reference a second time, as
// code generators and request validators do: the document the node serves loads and
// validates, and real requests and answers pass its openapi3filter (ValidateRequest,
// ValidateResponse). The JSON Schema checks of openapi_test.go are stricter on bodies
// (closed objects); these hold the document as an OpenAPI document: routes, parameters,
// security, request bodies, statuses, response headers.

// kinDoc is the served document as kin-openapi reads it, with a router over its paths.
type kinDoc struct {
	doc    *openapi3.T
	router routers.Router
}

// kinLoaded is the last document loadKinDoc read and what kin-openapi made of it:
// reading and validating it costs seconds under -race, and every node serves the same.
var kinLoaded struct {
	sync.Mutex
	raw  []byte
	doc  *kinDoc
	errs []error
}

// loadKinDoc reads GET /v1/openapi.json of n with kin-openapi's loader and validates it
// (every error, formats and examples included).
func loadKinDoc(t testing.TB, n *node) *kinDoc {
	t.Helper()
	a := callRaw(t, n, "GET", "/v1/openapi.json", nil)
	if a.status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d", a.status)
	}
	kinLoaded.Lock()
	defer kinLoaded.Unlock()
	if !bytes.Equal(a.raw, kinLoaded.raw) {
		kinLoaded.raw = a.raw
		kinLoaded.doc, kinLoaded.errs = readKinDoc(a.raw)
	}
	for _, err := range kinLoaded.errs {
		t.Errorf("kin-openapi: the served document: %v", err)
	}
	if kinLoaded.doc == nil || len(kinLoaded.errs) > 0 {
		t.FailNow()
	}
	return kinLoaded.doc
}

// readKinDoc loads and validates a document and builds its router.
func readKinDoc(raw []byte) (*kinDoc, []error) {
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, []error{err}
	}
	if err := doc.Validate(context.Background(), openapi3.EnableMultiError(), openapi3.EnableSchemaFormatValidation()); err != nil {
		var me openapi3.MultiError
		if !errors.As(err, &me) {
			me = openapi3.MultiError{err}
		}
		return nil, me
	}
	// The router matches a request's URL against the document's servers: the test node
	// listens on another address, so it matches on the path alone. gorilla/mux's router,
	// not kin-openapi's legacy one, which drops a trailing slash and so takes /console/
	// for /console (or the reverse, depending on map order).
	doc.Servers = nil
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, []error{err}
	}
	return &kinDoc{doc: doc, router: r}, nil
}

// kinAuth is the AuthenticationFunc of openapi3filter: a request satisfies a security
// scheme when it carries that scheme's credential (whether the credential is good is the
// node's business, and the answer's status says it).
func kinAuth(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s, h := in.SecurityScheme, in.RequestValidationInput.Request.Header
	switch {
	case s.Type == "apiKey" && s.In == "header":
		if h.Get(s.Name) == "" {
			return in.NewError(fmt.Errorf("no %s header", s.Name))
		}
	case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
		if !strings.HasPrefix(h.Get("Authorization"), "Bearer ") {
			return in.NewError(errors.New("no bearer token"))
		}
	default:
		return in.NewError(fmt.Errorf("security scheme %s is not one the test knows", in.SecuritySchemeName))
	}
	return nil
}

// kinRequest rebuilds the request callRaw sent: same method, path, headers and body.
func kinRequest(t testing.TB, method, path string, body any, headers []string) *http.Request {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	default:
		raw = jsonOf(t, b)
	}
	req, err := http.NewRequest(method, "http://node.test"+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// check validates a request and the node's answer to it with openapi3filter. refused
// says that the document refuses the request too: a request the node turns down for its
// shape (no credentials, a bad parameter or body) must break a rule the document states.
func (k *kinDoc) check(t testing.TB, req *http.Request, refused bool, got answer) error {
	t.Helper()
	in, err := k.route(req, got)
	if in == nil {
		return err
	}
	in.Options = &openapi3filter.Options{AuthenticationFunc: kinAuth, MultiError: true, SkipSettingDefaults: true}
	switch err := openapi3filter.ValidateRequest(context.Background(), in); {
	case err != nil && !refused:
		return fmt.Errorf("%s %s: the document refuses the request: %v", req.Method, req.URL.Path, err)
	case err == nil && refused:
		return fmt.Errorf("%s %s: the node answered %d %s but the document accepts the request", req.Method, req.URL.Path, got.status, got.code)
	}
	return k.validateAnswer(in, got)
}

// checkAnswer validates the node's answer to a request with openapi3filter, whatever
// the request (the authorization matrix sends bodies that are meant to fail).
func (k *kinDoc) checkAnswer(t testing.TB, req *http.Request, got answer) error {
	t.Helper()
	in, err := k.route(req, got)
	if in == nil {
		return err
	}
	return k.validateAnswer(in, got)
}

// route finds the operation of a request. A request no operation serves (404 of an
// unknown path, 405) must be answered with that status and the error envelope: then
// route returns no input, and the error of that check.
func (k *kinDoc) route(req *http.Request, got answer) (*openapi3filter.RequestValidationInput, error) {
	route, params, err := k.router.FindRoute(req)
	if err == nil {
		return &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route}, nil
	}
	var re *routers.RouteError
	if !errors.As(err, &re) {
		return nil, err
	}
	want := map[string]int{routers.ErrPathNotFound.Error(): http.StatusNotFound,
		routers.ErrMethodNotAllowed.Error(): http.StatusMethodNotAllowed}[re.Reason]
	if want == 0 || got.status != want {
		return nil, fmt.Errorf("%s %s: the document has no operation (%v) and the node answered %d", req.Method, req.URL.Path, err, got.status)
	}
	var v any
	if err := json.Unmarshal(got.raw, &v); err != nil {
		return nil, fmt.Errorf("%s %s %d: %v", req.Method, req.URL.Path, got.status, err)
	}
	if err := k.doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return nil, fmt.Errorf("%s %s %d: not the error envelope: %v", req.Method, req.URL.Path, got.status, err)
	}
	return nil, nil
}

// validateAnswer checks an answer's status (it must be documented), headers and, for
// JSON, body. The body of another media type (a stream, a page of the console) is not
// read by callRaw, so only its status and headers are checked.
func (k *kinDoc) validateAnswer(in *openapi3filter.RequestValidationInput, got answer) error {
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: got.status, Header: got.header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true,
			ExcludeResponseBody: !strings.HasPrefix(got.contentType, "application/json")}}
	out.SetBodyBytes(got.raw)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("%s %s %d: %v\n%s", in.Request.Method, in.Request.URL.Path, got.status, err, clip(got.raw))
	}
	return nil
}
