package server_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// parserList is the answer of GET /v1/parsers, decoded.
func parserList(t *testing.T, res *response) []map[string]any {
	t.Helper()
	data, ok := res.body["data"].([]any)
	if !ok || res.num("count") != float64(len(data)) {
		t.Fatalf("not a list: %s", res.raw)
	}
	out := make([]map[string]any, len(data))
	for i, d := range data {
		out[i] = d.(map[string]any)
	}
	return out
}

func TestParsers(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	var mineKey string
	err := func() error {
		ct, err := n.eng.AdminCreateTenant(context.Background(), model.CreateTenantInput{Name: "Mine org", Slug: "mine",
			Email: "ops@mine.example", Country: "CL", Verticals: []string{"telecom", "mining"}})
		if err != nil {
			return err
		}
		mineKey = ct.APIKey
		return nil
	}()
	if err != nil {
		t.Fatal(err)
	}
	acme := []string{"x-svc-api-key", f.key}
	mine := []string{"x-svc-api-key", mineKey}

	t.Run("OK", func(t *testing.T) {
		n := n.on(t)
		for name, auth := range map[string][]string{
			"APIKey":        acme,
			"FieldOperator": {"Authorization", n.login(f.emails["field_operator"])},
		} {
			ps := parserList(t, n.do("GET", "/v1/parsers", nil, auth...).want(http.StatusOK))
			var verticals []string
			for _, p := range ps {
				verticals = append(verticals, p["vertical"].(string))
				for _, k := range []string{"vertical", "name", "description", "location", "fields", "severities"} {
					if _, ok := p[k]; !ok {
						t.Errorf("%s: parser field %s missing: %v", name, k, p)
					}
				}
				if p["name"] != p["vertical"].(string)+".v1" {
					t.Errorf("%s: parser %v", name, p)
				}
			}
			want := []string{"banking", "delivery", "emergency", "gov", "healthcare", "logistics", "telecom"}
			if !slices.Equal(verticals, want) {
				t.Fatalf("%s: verticals %v, want %v", name, verticals, want)
			}
		}
	})
	t.Run("CustomVertical", func(t *testing.T) {
		n := n.on(t)
		ps := parserList(t, n.do("GET", "/v1/parsers", nil, mine...).want(http.StatusOK))
		if len(ps) != 8 || ps[6]["vertical"] != "mining" || ps[6]["name"] != "generic.v1" {
			t.Fatalf("parsers: %v", ps)
		}
	})
	t.Run("Filter", func(t *testing.T) {
		n := n.on(t)
		ps := parserList(t, n.do("GET", "/v1/parsers?vertical=healthcare", nil, acme...).want(http.StatusOK))
		if len(ps) != 1 || ps[0]["name"] != "healthcare.v1" || !slices.Contains(ps[0]["severities"].([]any), any("red")) {
			t.Fatalf("parsers: %v", ps)
		}
		ps = parserList(t, n.do("GET", "/v1/parsers?vertical=mining", nil, mine...).want(http.StatusOK))
		if len(ps) != 1 || ps[0]["vertical"] != "mining" || ps[0]["name"] != "generic.v1" {
			t.Fatalf("parsers: %v", ps)
		}
	})
	t.Run("ErrUnknownVertical", func(t *testing.T) {
		n := n.on(t)
		for _, q := range []string{"vertical=mining", "vertical=", "vertical=HEALTHCARE", "vertical=nope"} {
			n.do("GET", "/v1/parsers?"+q, nil, acme...).wantErr(http.StatusBadRequest, "validation_error", "vertical")
		}
	})
	t.Run("ErrUnauthenticated", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/parsers", nil).wantErr(http.StatusUnauthorized, "unauthorized")
		n.do("GET", "/v1/parsers", nil, "x-svc-api-key", "fr_live_nope").wantErr(http.StatusUnauthorized, "unauthorized")
	})
}
