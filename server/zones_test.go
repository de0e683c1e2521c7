package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// squareRing is a closed square ring of [lng, lat] positions.
func squareRing(lng, lat, side float64) [][]float64 {
	return [][]float64{{lng, lat}, {lng + side, lat}, {lng + side, lat + side}, {lng, lat + side}, {lng, lat}}
}

func zoneBody(code string) map[string]any {
	return map[string]any{"code": code, "name": "Zone " + code,
		"boundary": map[string]any{"type": "Polygon", "coordinates": [][][]float64{squareRing(2.2, 48.8, 0.2)}}}
}

func (r *response) obj(k string) map[string]any {
	m, _ := r.body[k].(map[string]any)
	return m
}

func (r *response) items() []map[string]any {
	var out []map[string]any
	list, _ := r.body["data"].([]any)
	for _, it := range list {
		m, _ := it.(map[string]any)
		out = append(out, m)
	}
	return out
}

func TestZones(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	tech := []string{"Authorization", n.login(f.emails["company_tech"])}
	operator := []string{"Authorization", n.login(f.emails["field_operator"])}
	otherAdmin := []string{"Authorization", n.login(other.emails["company_admin"])}

	t.Run("Create", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/zones", zoneBody("PAR-01"), tech...).want(http.StatusCreated)
		for _, k := range []string{"id", "code", "name", "boundary", "centroid", "connectivity", "created_at", "updated_at"} {
			if _, ok := res.body[k]; !ok {
				t.Errorf("zone field %s missing: %s", k, res.raw)
			}
		}
		if res.str("code") != "PAR-01" || res.str("name") != "Zone PAR-01" || !timeRE.MatchString(res.str("created_at")) {
			t.Fatalf("zone: %s", res.raw)
		}
		c := res.obj("centroid")
		if c["lat"].(float64) < 48.8999 || c["lat"].(float64) > 48.9001 || c["lng"].(float64) < 2.2999 || c["lng"].(float64) > 2.3001 {
			t.Fatalf("centroid: %s", res.raw)
		}
		conn := res.obj("connectivity")
		if conn["state"] != "unknown" || conn["last_report_at"] != nil || conn["since"] != res.str("created_at") {
			t.Fatalf("connectivity of a new zone: %s", res.raw)
		}
		if _, ok := conn["last_report_at"]; !ok {
			t.Fatalf("last_report_at must be present (null): %s", res.raw)
		}
		n.do("POST", "/v1/zones", zoneBody("PAR-02"), "x-svc-api-key", f.key).want(http.StatusCreated)
		n.do("POST", "/v1/zones", zoneBody("LYO-01"), tech...).want(http.StatusCreated)
	})
	t.Run("ErrDuplicate", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/zones", zoneBody("PAR-01"), tech...).wantErr(http.StatusConflict, "conflict")
		n.do("POST", "/v1/zones", zoneBody("PAR-01"), otherAdmin...).want(http.StatusCreated)
	})
	t.Run("ErrValidation", func(t *testing.T) {
		n := n.on(t)
		for _, c := range []struct {
			body  string
			field string
		}{
			{`{"name": "x", "boundary": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[1,1],[0,0]]]}}`, "code"},
			{`{"code": "a b", "name": "x", "boundary": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[1,1],[0,0]]]}}`, "code"},
			{`{"code": 7, "name": "x"}`, "code"},
			{`{"code": "Z1", "boundary": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[1,1],[0,0]]]}}`, "name"},
			{`{"code": "Z1", "name": "x"}`, "boundary"},
			{`{"code": "Z1", "name": "x", "boundary": null}`, "boundary"},
			{`{"code": "Z1", "name": "x", "boundary": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[1,1],[0,1]]]}}`, "boundary"},
			{`{"code": "Z1", "name": "x", "boundary": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[0,0]]]}}`, "boundary"},
			{`{"code": "Z1", "name": "x", "boundary": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[1,95],[0,0]]]}}`, "boundary"},
			{`{"code": "Z1", "name": "x", "boundary": {"type": "Polygon", "coordinates": [[[0,0],[190,0],[1,1],[0,0]]]}}`, "boundary"},
			{`{"code": "Z1", "name": "x", "boundary": {"type": "Point", "coordinates": [0,0]}}`, "boundary"},
			{`{"code": "Z1", "name": "x", "boundary": {"type": "MultiPolygon", "coordinates": [[[[0,0],[1,0],[1,1],[0,0]]]]}}`, "boundary"},
			{`{"code": "Z1", "name": "x", "boundary": "POLYGON((0 0, 1 0, 1 1, 0 0))"}`, "boundary"},
			{`{"code": "Z1", "name": "x", "boundary": {"type": "Polygon", "coordinates": "none"}}`, "boundary"},
			{`{"code": "Z1", "name": "x", "boundary": {"type": "Polygon", "coordinates": []}}`, "boundary"},
		} {
			n.do("POST", "/v1/zones", c.body, tech...).wantErr(http.StatusBadRequest, "validation_error", c.field)
		}
		n.do("POST", "/v1/zones", `{"code": `, tech...).wantErr(http.StatusBadRequest, "invalid_json")
		n.do("GET", "/v1/zones/Z1", nil, tech...).wantErr(http.StatusNotFound, "not_found")
	})
	t.Run("Get", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/zones/PAR-01", nil, operator...).want(http.StatusOK)
		if res.str("code") != "PAR-01" || res.obj("boundary")["type"] != "Polygon" {
			t.Fatalf("zone: %s", res.raw)
		}
		n.do("GET", "/v1/zones/NOPE", nil, operator...).wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/v1/zones/bad%20code", nil, operator...).wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/v1/zones/LYO-01", nil, otherAdmin...).wantErr(http.StatusNotFound, "not_found")
	})
	t.Run("ListBothPaths", func(t *testing.T) {
		n := n.on(t)
		a := n.do("GET", "/v1/zones", nil, operator...).want(http.StatusOK)
		b := n.do("GET", "/v1/tenant/zones", nil, "Authorization", n.login(f.emails["corporate_client"])).want(http.StatusOK)
		if a.num("count") != 3 || len(a.items()) != 3 {
			t.Fatalf("list: %s", a.raw)
		}
		var codes []string
		for _, z := range a.items() {
			codes = append(codes, z["code"].(string))
		}
		if codes[0] != "LYO-01" || codes[1] != "PAR-02" || codes[2] != "PAR-01" {
			t.Fatalf("codes %v, want newest first", codes)
		}
		da, _ := json.Marshal(a.body["data"])
		db, _ := json.Marshal(b.body["data"])
		if !bytes.Equal(da, db) || a.num("count") != b.num("count") {
			t.Fatalf("the two list paths differ:\n%s\n%s", a.raw, b.raw)
		}
		if _, ok := a.body["next_cursor"]; ok {
			t.Fatalf("next_cursor on the last page: %s", a.raw)
		}
		p1 := n.do("GET", "/v1/zones?limit=2", nil, operator...).want(http.StatusOK)
		if p1.num("count") != 2 || p1.str("next_cursor") == "" {
			t.Fatalf("page 1: %s", p1.raw)
		}
		p2 := n.do("GET", "/v1/zones?limit=2&cursor="+p1.str("next_cursor"), nil, operator...).want(http.StatusOK)
		if p2.num("count") != 1 || p2.items()[0]["code"] != "PAR-01" {
			t.Fatalf("page 2: %s", p2.raw)
		}
		n.do("GET", "/v1/zones?limit=0", nil, operator...).wantErr(http.StatusBadRequest, "validation_error", "limit")
		n.do("GET", "/v1/zones?cursor=%21%21", nil, operator...).wantErr(http.StatusBadRequest, "validation_error", "cursor")
		o := n.do("GET", "/v1/tenant/zones", nil, otherAdmin...).want(http.StatusOK)
		if o.num("count") != 1 || o.items()[0]["code"] != "PAR-01" || o.items()[0]["id"] == a.items()[1]["id"] {
			t.Fatalf("other tenant's list: %s", o.raw)
		}
	})
	t.Run("Patch", func(t *testing.T) {
		n := n.on(t)
		before := n.do("GET", "/v1/zones/PAR-02", nil, tech...)
		n.clock.Advance(time.Second)
		res := n.do("PATCH", "/v1/zones/PAR-02", map[string]any{"name": "Paris sud"}, tech...).want(http.StatusOK)
		if res.str("name") != "Paris sud" || res.str("id") != before.str("id") || res.str("updated_at") == before.str("updated_at") ||
			res.str("created_at") != before.str("created_at") {
			t.Fatalf("patched: %s", res.raw)
		}
		res = n.do("PATCH", "/v1/zones/PAR-02", map[string]any{"code": "PAR-02",
			"boundary": map[string]any{"type": "Polygon", "coordinates": [][][]float64{squareRing(4.8, 45.7, 0.2)}}}, tech...).want(http.StatusOK)
		c := res.obj("centroid")
		if res.str("name") != "Paris sud" || c["lat"].(float64) < 45.7999 || c["lat"].(float64) > 45.8001 ||
			c["lng"].(float64) < 4.8999 || c["lng"].(float64) > 4.9001 {
			t.Fatalf("patched boundary: %s", res.raw)
		}
		got := n.do("GET", "/v1/zones/PAR-02", nil, tech...)
		if got.str("name") != "Paris sud" || got.obj("centroid")["lat"] != c["lat"] {
			t.Fatalf("stored: %s", got.raw)
		}
		n.do("PATCH", "/v1/zones/PAR-02", map[string]any{}, tech...).want(http.StatusOK)
	})
	t.Run("ErrPatch", func(t *testing.T) {
		n := n.on(t)
		before := n.do("GET", "/v1/zones/PAR-02", nil, tech...)
		for _, c := range []struct {
			body  string
			field string
		}{
			{`{"code": "PAR-03"}`, "code"},
			{`{"name": ""}`, "name"},
			{`{"name": 5}`, "name"},
			{`{"boundary": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[1,1],[0,1]]]}}`, "boundary"},
			{`{"boundary": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[0,0]]]}}`, "boundary"},
			{`{"boundary": {"type": "Polygon", "coordinates": [[[0,-91],[1,0],[1,1],[0,-91]]]}}`, "boundary"},
			{`{"boundary": {"type": "LineString", "coordinates": [[0,0],[1,1]]}}`, "boundary"},
			{`{"boundary": [1, 2]}`, "boundary"},
		} {
			n.do("PATCH", "/v1/zones/PAR-02", c.body, tech...).wantErr(http.StatusBadRequest, "validation_error", c.field)
		}
		after := n.do("GET", "/v1/zones/PAR-02", nil, tech...)
		if !bytes.Equal(mustJSON(before.body["boundary"]), mustJSON(after.body["boundary"])) || before.str("updated_at") != after.str("updated_at") {
			t.Fatalf("a refused patch changed the zone: %s → %s", before.raw, after.raw)
		}
		n.do("PATCH", "/v1/zones/NOPE", map[string]any{"name": "x"}, tech...).wantErr(http.StatusNotFound, "not_found")
		n.do("PATCH", "/v1/zones/bad%20code", map[string]any{"name": "x"}, tech...).wantErr(http.StatusNotFound, "not_found")
		n.do("PATCH", "/v1/zones/LYO-01", map[string]any{"name": "x"}, otherAdmin...).wantErr(http.StatusNotFound, "not_found")
		n.do("PATCH", "/v1/zones/PAR-02", `{"name": "x"}`, append(tech, "Content-Type", "text/plain")...).
			wantErr(http.StatusUnsupportedMediaType, "unsupported_media_type")
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		n := n.on(t)
		for _, role := range []string{"operational_supervisor", "field_operator", "corporate_client", "api_user"} {
			auth := []string{"Authorization", n.login(f.emails[role])}
			n.do("POST", "/v1/zones", zoneBody("Z9"), auth...).wantErr(http.StatusForbidden, "forbidden")
			n.do("PATCH", "/v1/zones/PAR-01", map[string]any{"name": "x"}, auth...).wantErr(http.StatusForbidden, "forbidden")
			n.do("DELETE", "/v1/zones/PAR-01", nil, auth...).wantErr(http.StatusForbidden, "forbidden")
			n.do("GET", "/v1/zones", nil, auth...).want(http.StatusOK)
		}
		n.do("GET", "/v1/zones", nil).wantErr(http.StatusUnauthorized, "unauthorized")
		n.do("GET", "/v1/zones/PAR-01", nil, "x-svc-api-key", "fr_live_00000000000000000000000000000000").wantErr(http.StatusUnauthorized, "unauthorized")
	})
	t.Run("IdempotentCreate", func(t *testing.T) {
		n := n.on(t)
		key := []string{"Idempotency-Key", "zone-nice-1"}
		first := n.do("POST", "/v1/zones", zoneBody("NCE-01"), append(tech, key...)...).want(http.StatusCreated)
		again := n.do("POST", "/v1/zones", zoneBody("NCE-01"), append(tech, key...)...).want(http.StatusCreated)
		if again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.raw, again.raw) ||
			again.str("request_id") != first.str("request_id") {
			t.Fatalf("replay:\n%s\n%s (%v)", first.raw, again.raw, again.header)
		}
		other := zoneBody("NCE-01")
		other["name"] = "Nice"
		n.do("POST", "/v1/zones", other, append(tech, key...)...).wantErr(http.StatusUnprocessableEntity, "idempotency_key_reused")
		// Without a key, the same body is a second create: the code is taken.
		n.do("POST", "/v1/zones", zoneBody("NCE-01"), tech...).wantErr(http.StatusConflict, "conflict")
		// A body field idempotency_key works as the header does.
		body := zoneBody("NCE-02")
		body["idempotency_key"] = "zone-nice-2"
		n.do("POST", "/v1/zones", body, tech...).want(http.StatusCreated)
		if r := n.do("POST", "/v1/zones", body, tech...).want(http.StatusCreated); r.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("body key replay: %v", r.header)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		n := n.on(t)
		z := n.do("GET", "/v1/zones/NCE-02", nil, tech...).want(http.StatusOK)
		n.do("DELETE", "/v1/zones/NCE-02", nil, otherAdmin...).wantErr(http.StatusNotFound, "not_found")
		key := []string{"Idempotency-Key", "del-nce-02"}
		res := n.do("DELETE", "/v1/zones/NCE-02", nil, append(tech, key...)...).want(http.StatusOK)
		if res.str("id") != z.str("id") || res.body["deleted"] != true || len(res.body) != 3 {
			t.Fatalf("delete answer: %s", res.raw)
		}
		replay := n.do("DELETE", "/v1/zones/NCE-02", nil, append(tech, key...)...).want(http.StatusOK)
		if replay.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.raw, res.raw) {
			t.Fatalf("delete replay: %s", replay.raw)
		}
		n.do("DELETE", "/v1/zones/NCE-02", nil, tech...).wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/v1/zones/NCE-02", nil, tech...).wantErr(http.StatusNotFound, "not_found")
		n.do("DELETE", "/v1/zones/bad%20code", nil, tech...).wantErr(http.StatusNotFound, "not_found")
		n.do("PUT", "/v1/zones/NCE-01", zoneBody("NCE-01"), tech...).wantErr(http.StatusMethodNotAllowed, "method_not_allowed")
	})
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func TestConnectivity(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	tech := []string{"Authorization", n.login(f.emails["company_tech"])}
	operator := []string{"Authorization", n.login(f.emails["field_operator"])}
	client := []string{"Authorization", n.login(f.emails["corporate_client"])}
	for _, code := range []string{"B", "A"} {
		n.do("POST", "/v1/zones", zoneBody(code), tech...).want(http.StatusCreated)
	}
	n.do("POST", "/v1/zones", zoneBody("X"), "x-svc-api-key", other.key).want(http.StatusCreated)
	start := n.clock.Now()
	stampOf := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

	t.Run("Report", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/connectivity/report", map[string]any{"zone_code": "A", "state": "degraded",
			"device_id": "tablet-1", "signal_dbm": -101, "network": "3g"}, operator...).want(http.StatusOK)
		if res.str("zone_code") != "A" || res.str("state") != "degraded" || res.str("last_report_at") != stampOf(start) ||
			res.str("since") != stampOf(start) || len(res.body) != 5 {
			t.Fatalf("report answer: %s", res.raw)
		}
		z := n.do("GET", "/v1/zones/A", nil, client...).want(http.StatusOK)
		c := z.obj("connectivity")
		if c["state"] != "degraded" || c["device_id"] != "tablet-1" || c["signal_dbm"] != -101.0 || c["network"] != "3g" {
			t.Fatalf("zone connectivity: %s", z.raw)
		}
		n.clock.Advance(time.Minute)
		res = n.do("POST", "/v1/connectivity/report", map[string]any{"zone_code": "A", "state": "degraded"}, "x-svc-api-key", f.key).want(http.StatusOK)
		if res.str("since") != stampOf(start) || res.str("last_report_at") != stampOf(n.clock.Now()) {
			t.Fatalf("same state again: %s", res.raw)
		}
	})
	t.Run("Status", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/connectivity/status?zone_code=A", nil, client...).want(http.StatusOK)
		if res.str("state") != "degraded" || res.str("zone_code") != "A" {
			t.Fatalf("status: %s", res.raw)
		}
		res = n.do("GET", "/v1/connectivity/status?zone_code=B", nil, client...).want(http.StatusOK)
		if res.str("state") != "unknown" || res.body["last_report_at"] != nil {
			t.Fatalf("status of a zone never reported: %s", res.raw)
		}
		if _, ok := res.body["last_report_at"]; !ok {
			t.Fatalf("last_report_at must be present: %s", res.raw)
		}
		all := n.do("GET", "/v1/connectivity/status", nil, client...).want(http.StatusOK)
		if all.num("count") != 2 || all.items()[0]["zone_code"] != "A" || all.items()[0]["state"] != "degraded" ||
			all.items()[1]["zone_code"] != "B" || all.items()[1]["state"] != "unknown" {
			t.Fatalf("every zone's status: %s", all.raw)
		}
		n.do("GET", "/v1/connectivity/status?zone_code=NOPE", nil, client...).wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/v1/connectivity/status?zone_code=X", nil, client...).wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/v1/connectivity/status?zone_code=A", nil, "x-svc-api-key", other.key).wantErr(http.StatusNotFound, "not_found")
	})
	t.Run("Stale", func(t *testing.T) {
		n := n.on(t)
		n.clock.Advance(10 * time.Minute) // the last report was a minute ago: now eleven
		res := n.do("GET", "/v1/connectivity/status?zone_code=A", nil, client...).want(http.StatusOK)
		last := start.Add(time.Minute)
		if res.str("state") != "unknown" || res.str("last_report_at") != stampOf(last) || res.str("since") != stampOf(last.Add(10*time.Minute)) {
			t.Fatalf("stale status: %s", res.raw)
		}
		a := n.do("GET", "/v1/zones", nil, client...).items()[0]
		b := n.do("GET", "/v1/tenant/zones", nil, client...).items()[0]
		if a["connectivity"].(map[string]any)["state"] != "unknown" || b["connectivity"].(map[string]any)["state"] != "unknown" {
			t.Fatalf("the list shows a stale report as in force: %v / %v", a, b)
		}
		res = n.do("POST", "/v1/connectivity/report", map[string]any{"zone_code": "A", "state": "online"}, operator...).want(http.StatusOK)
		if res.str("state") != "online" || res.str("since") != stampOf(n.clock.Now()) {
			t.Fatalf("online after unknown: %s", res.raw)
		}
	})
	t.Run("OutOfOrderAndFuture", func(t *testing.T) {
		n := n.on(t)
		now := n.clock.Now()
		res := n.do("POST", "/v1/connectivity/report", map[string]any{"zone_code": "A", "state": "offline",
			"reported_at": stampOf(now.Add(-time.Minute))}, operator...).want(http.StatusOK)
		if res.str("state") != "online" || res.str("last_report_at") != stampOf(now) {
			t.Fatalf("an older report moved the state: %s", res.raw)
		}
		n.do("POST", "/v1/connectivity/report", map[string]any{"zone_code": "A", "state": "offline",
			"reported_at": stampOf(now.Add(3 * time.Minute))}, operator...).wantErr(http.StatusBadRequest, "validation_error", "reported_at")
		res = n.do("GET", "/v1/connectivity/status?zone_code=A", nil, client...)
		if res.str("state") != "online" {
			t.Fatalf("a refused report was recorded: %s", res.raw)
		}
	})
	t.Run("ErrValidation", func(t *testing.T) {
		n := n.on(t)
		for _, c := range []struct {
			body  string
			field string
		}{
			{`{"state": "online"}`, "zone_code"},
			{`{"zone_code": "NOPE", "state": "online"}`, "zone_code"},
			{`{"zone_code": "X", "state": "online"}`, "zone_code"},
			{`{"zone_code": 1, "state": "online"}`, "zone_code"},
			{`{"zone_code": "A"}`, "state"},
			{`{"zone_code": "A", "state": "unknown"}`, "state"},
			{`{"zone_code": "A", "state": "up"}`, "state"},
			{`{"zone_code": "A", "state": "online", "signal_dbm": -151}`, "signal_dbm"},
			{`{"zone_code": "A", "state": "online", "signal_dbm": 3}`, "signal_dbm"},
			{`{"zone_code": "A", "state": "online", "signal_dbm": "strong"}`, "signal_dbm"},
			{`{"zone_code": "A", "state": "online", "network": "` + string(bytes.Repeat([]byte("n"), 33)) + `"}`, "network"},
			{`{"zone_code": "A", "state": "online", "device_id": "` + string(bytes.Repeat([]byte("d"), 65)) + `"}`, "device_id"},
			{`{"zone_code": "A", "state": "online", "reported_at": "today"}`, "reported_at"},
			{`{"zone_code": "A", "state": "online", "reported_at": 1717}`, "reported_at"},
		} {
			n.do("POST", "/v1/connectivity/report", c.body, operator...).wantErr(http.StatusBadRequest, "validation_error", c.field)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		n := n.on(t)
		for _, role := range []string{"company_tech", "corporate_client", "api_user"} {
			n.do("POST", "/v1/connectivity/report", map[string]any{"zone_code": "A", "state": "online"},
				"Authorization", n.login(f.emails[role])).wantErr(http.StatusForbidden, "forbidden")
		}
		n.do("POST", "/v1/connectivity/report", map[string]any{"zone_code": "A", "state": "online"},
			"Authorization", n.login(f.emails["operational_supervisor"])).want(http.StatusOK)
	})
	t.Run("IdempotentReport", func(t *testing.T) {
		n := n.on(t)
		key := []string{"Idempotency-Key", "conn-1"}
		body := map[string]any{"zone_code": "B", "state": "offline"}
		first := n.do("POST", "/v1/connectivity/report", body, append(operator, key...)...).want(http.StatusOK)
		n.clock.Advance(time.Minute)
		again := n.do("POST", "/v1/connectivity/report", body, append(operator, key...)...).want(http.StatusOK)
		if again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.raw, again.raw) {
			t.Fatalf("replay: %s / %s", first.raw, again.raw)
		}
	})
}
