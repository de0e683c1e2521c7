package server_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestLists: every list of the API follows the list rules of docs/rules.md: `limit` below 1 or not a
// number and a cursor that does not decode are 400 validation_error; `limit` is honoured
// with a `next_cursor` only while more remain; walking the cursors yields every item once,
// newest first for records (by id, UUIDv7) and by vertical for the parsers.
func TestLists(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	for _, code := range []string{"B-1", "A-1", "C-1"} {
		n.do("POST", "/v1/zones", zoneBody(code), key...).want(http.StatusCreated)
	}
	for _, name := range []string{"Bravo", "Alpha", "Charlie"} {
		n.do("POST", "/v1/teams", map[string]any{"name": name, "verticals": []string{"gov"}}, key...).want(http.StatusCreated)
	}
	for _, u := range []string{"https://93.184.216.34/b", "https://93.184.216.34/a", "https://93.184.216.34/c"} {
		n.do("POST", "/v1/webhooks", map[string]any{"url": u}, key...).want(http.StatusCreated)
	}
	for _, name := range []string{"b", "a"} {
		n.do("POST", "/v1/tenant/api-keys", map[string]any{"name": name, "scopes": []string{"events:read"}}, admin...).want(http.StatusCreated)
	}

	lists := []struct {
		path, key string
		newest    bool // records newest first by id; else ascending by key
		min       int  // at least this many items exist
		zoneOrder bool // the zones' order (statuses have no id of their own)
	}{
		{"/v1/zones", "id", true, 3, false},
		{"/v1/tenant/zones", "id", true, 3, false},
		{"/v1/connectivity/status", "zone_code", false, 3, true},
		{"/v1/teams", "id", true, 3, false},
		{"/v1/webhooks", "id", true, 3, false},
		{"/v1/tenant/api-keys", "id", true, 3, false},
		{"/v1/parsers", "vertical", false, 7, false},
		{"/v1/tenant/users", "id", true, 6, false},
		{"/v1/events", "event_id", true, 0, false},
		{"/v1/missions", "id", true, 0, false},
	}
	for _, l := range lists {
		t.Run(l.path, func(t *testing.T) {
			n := n.on(t)
			for _, bad := range []string{"limit=0", "limit=-5", "limit=abc", "limit=1.5"} {
				n.do("GET", l.path+"?"+bad, nil, admin...).wantErr(http.StatusBadRequest, "validation_error", "limit")
			}
			n.do("GET", l.path+"?cursor=%21%21", nil, admin...).wantErr(http.StatusBadRequest, "validation_error", "cursor")

			all := n.do("GET", l.path+"?limit=500", nil, admin...).want(http.StatusOK)
			if _, more := all.body["next_cursor"]; more || int(all.num("count")) != len(all.items()) || len(all.items()) < l.min {
				t.Fatalf("whole list: %s", all.raw)
			}
			var want []string
			for _, it := range all.items() {
				want = append(want, it[l.key].(string))
			}
			var zoneCodes []string
			for _, z := range n.do("GET", "/v1/zones", nil, admin...).want(http.StatusOK).items() {
				zoneCodes = append(zoneCodes, z["code"].(string))
			}
			switch {
			case l.zoneOrder && !slices.Equal(want, zoneCodes),
				!l.zoneOrder && l.newest && !slices.IsSortedFunc(want, func(a, b string) int { return strings.Compare(b, a) }),
				!l.zoneOrder && !l.newest && !slices.IsSorted(want):
				t.Fatalf("order of %s: %v", l.key, want)
			}
			var walked []string
			cursor := ""
			for range len(want) + 1 {
				q := url.Values{"limit": {"1"}}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				p := n.do("GET", l.path+"?"+q.Encode(), nil, admin...).want(http.StatusOK)
				for _, it := range p.items() {
					walked = append(walked, it[l.key].(string))
				}
				if cursor = p.str("next_cursor"); cursor == "" {
					break
				}
				if len(p.items()) != 1 {
					t.Fatalf("a page of limit 1 with %d items and a next_cursor: %s", len(p.items()), p.raw)
				}
			}
			if !slices.Equal(walked, want) {
				t.Fatalf("walking the pages: %v, want %v", walked, want)
			}
		})
	}
}
