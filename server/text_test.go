package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/netguard"
)

// refusal is how a request refused a value: the answer's error for a request refused
// whole, the item's for an item of a sync batch or a device sync (judged alone).
type refusal struct {
	status      int
	code, field string
	raw         []byte
}

// whole is the refusal of a request refused whole.
func whole(res *response) refusal {
	return refusal{status: res.status, code: res.str("error"), field: res.str("field"), raw: res.raw}
}

// textMarker starts every refused value of TestText_ControlCharacters: no fixture holds
// it, so a record that holds it was stored from a refused request.
const textMarker = "zzbad"

// TestText_ControlCharacters: every identifier, name, type and key field the API takes
// (docs/rules.md, HTTP), given a value holding NUL, U+FFFF (a noncharacter) or U+202E (the
// right-to-left override), is refused with a validation_error naming the field, and
// nothing of it is stored. The table is the one list of those fields; free text (notes,
// feedback, payload, an SMS body) is not in it. Tenant fields, which only the command line
// sets, are held by engine.TestAdminCreateTenant_RefusesControlText.
func TestText_ControlCharacters(t *testing.T) {
	n := newNodeWith(t, nodeOptions{webhookPolicy: netguard.AddressPolicy{AllowLoopback: true}})
	f := n.addTenant("txt", "mission-critical")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	key := []string{"x-svc-api-key", f.key}

	n.do("POST", "/v1/zones", zoneBody("TXT"), admin...).want(http.StatusCreated)
	team := n.do("POST", "/v1/teams", map[string]any{"name": "Alpha", "verticals": []string{"emergency"}}, admin...).
		want(http.StatusCreated).str("id")
	hook := n.do("POST", "/v1/webhooks", map[string]any{"url": "https://127.0.0.1:9/hook"}, admin...).want(http.StatusCreated).str("id")
	var user string
	for _, u := range n.do("GET", "/v1/tenant/users?limit=500", nil, admin...).want(http.StatusOK).items() {
		if u["email"] == f.emails["api_user"] {
			user, _ = u["id"].(string)
		}
	}
	device := n.do("POST", "/v1/devices/register", map[string]any{"name": "tablet", "platform": "android"}, admin...).
		want(http.StatusCreated).str("device_id")

	seq, serial := 0, 0
	next := func() string { serial++; return fmt.Sprintf("txt-%d", serial) }
	event := func(k, v string) map[string]any {
		b := map[string]any{"type": "FIRE", "priority": "high", "vertical": "emergency", "idempotency_key": next()}
		b[k] = v
		return b
	}
	// item is the refusal of the first item of a sync batch or device sync answer; raw is
	// where the item is kept (the batch record, the answer).
	item := func(it map[string]any, code string, raw []byte) refusal {
		if it["status"] != "rejected" {
			return refusal{status: http.StatusOK, raw: raw}
		}
		field, _ := it["field"].(string)
		return refusal{status: http.StatusBadRequest, code: code, field: field, raw: raw}
	}
	// A sync batch of one item, with the value in the item (or in the batch when onBatch).
	batch := func(n *node, k, v string, onBatch bool) refusal {
		it := map[string]any{"type": "FIRE", "vertical": "emergency", "idempotency_key": next()}
		b := syncBatch(it)
		if onBatch {
			b[k] = v
		} else {
			it[k] = v
		}
		res := n.do("POST", "/v1/sync/batch", b, key...)
		if res.status != http.StatusOK {
			return whole(res)
		}
		st := n.do("GET", "/v1/sync/status?batch_id="+res.str("batch_id"), nil, key...).want(http.StatusOK)
		got := st.list("items")[0]
		e, _ := got["error"].(map[string]any)
		code, _ := e["code"].(string)
		got["field"] = e["field"]
		return item(got, code, st.raw)
	}
	// A device sync of one event item holding the value.
	deviceEvent := func(n *node, k, v string) refusal {
		seq++
		res := n.do("POST", "/v1/devices/sync", map[string]any{"device_id": device, "items": []any{map[string]any{
			"sequence_number": seq, "kind": "event", "captured_at": "2026-01-01T00:00:00.000Z", "payload": event(k, v)}}}, admin...)
		if res.status != http.StatusOK {
			return whole(res)
		}
		got := res.list("results")[0]
		code, _ := got["error"].(string)
		return item(got, code, res.raw)
	}
	send := func(n *node, method, path string, body any, headers ...string) refusal {
		return whole(n.do(method, path, body, append(append([]string{}, admin...), headers...)...))
	}
	zone := func(name string) map[string]any { b := zoneBody("ZK" + next()[4:]); b["name"] = name; return b }

	for _, row := range []struct {
		name, field string
		// header is true for a value sent in a header, where net/http sends no NUL.
		header bool
		send   func(n *node, v string) refusal
	}{
		// events, and the same fields in a sync batch item and a device sync event item
		{"POST /v1/events type", "type", false, func(n *node, v string) refusal { return send(n, "POST", "/v1/events", event("type", v)) }},
		{"POST /v1/events idempotency_key", "idempotency_key", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/events", event("idempotency_key", v))
		}},
		{"POST /v1/events zone_code", "zone_code", false, func(n *node, v string) refusal { return send(n, "POST", "/v1/events", event("zone_code", v)) }},
		{"POST /v1/events vertical", "vertical", false, func(n *node, v string) refusal { return send(n, "POST", "/v1/events", event("vertical", v)) }},
		{"POST /v1/sync/batch events[].type", "type", false, func(n *node, v string) refusal { return batch(n, "type", v, false) }},
		{"POST /v1/sync/batch events[].idempotency_key", "idempotency_key", false, func(n *node, v string) refusal {
			return batch(n, "idempotency_key", v, false)
		}},
		{"POST /v1/sync/batch device_id", "device_id", false, func(n *node, v string) refusal { return batch(n, "device_id", v, true) }},
		{"POST /v1/sync/batch Idempotency-Key", "idempotency_key", true, func(n *node, v string) refusal {
			return whole(n.do("POST", "/v1/sync/batch", syncBatch(syncItem(next())), append(key, "Idempotency-Key", v)...))
		}},
		{"POST /v1/devices/sync event item type", "payload.type", false, func(n *node, v string) refusal { return deviceEvent(n, "type", v) }},
		{"POST /v1/devices/sync event item idempotency_key", "payload.idempotency_key", false, func(n *node, v string) refusal {
			return deviceEvent(n, "idempotency_key", v)
		}},
		{"POST /v1/devices/sync Idempotency-Key", "idempotency_key", true, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/devices/sync", map[string]any{"device_id": device, "items": []any{}}, "Idempotency-Key", v)
		}},

		// the idempotency key of every other write, as a header or a body field
		{"Idempotency-Key header of a write", "idempotency_key", true, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/zones", zone(textMarker+" header"), "Idempotency-Key", v)
		}},
		{"idempotency_key body field of a write", "idempotency_key", false, func(n *node, v string) refusal {
			b := zone(textMarker + " body key")
			b["idempotency_key"] = v
			return send(n, "POST", "/v1/zones", b)
		}},

		// zones and connectivity
		{"POST /v1/zones code", "code", false, func(n *node, v string) refusal {
			b := zoneBody("X")
			b["code"] = v
			return send(n, "POST", "/v1/zones", b)
		}},
		{"POST /v1/zones name", "name", false, func(n *node, v string) refusal { return send(n, "POST", "/v1/zones", zone(v)) }},
		{"PATCH /v1/zones/:code name", "name", false, func(n *node, v string) refusal {
			return send(n, "PATCH", "/v1/zones/TXT", map[string]any{"name": v})
		}},
		{"POST /v1/connectivity/report device_id", "device_id", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/connectivity/report", map[string]any{"zone_code": "TXT", "state": "online", "device_id": v})
		}},
		{"POST /v1/connectivity/report network", "network", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/connectivity/report", map[string]any{"zone_code": "TXT", "state": "online", "network": v})
		}},

		// teams and members
		{"POST /v1/teams name", "name", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/teams", map[string]any{"name": v, "verticals": []string{"emergency"}})
		}},
		{"POST /v1/teams equipment", "equipment", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/teams", map[string]any{"name": textMarker, "verticals": []string{"emergency"}, "equipment": []string{v}})
		}},
		{"POST /v1/teams verticals", "verticals", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/teams", map[string]any{"name": textMarker, "verticals": []string{v}})
		}},
		{"POST /v1/teams zone_code", "zone_code", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/teams", map[string]any{"name": textMarker, "verticals": []string{"emergency"}, "zone_code": v})
		}},
		{"POST /v1/teams members[].name", "members.name", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/teams", map[string]any{"name": textMarker, "verticals": []string{"emergency"},
				"members": []any{map[string]any{"name": v}}})
		}},
		{"PATCH /v1/teams/:id name", "name", false, func(n *node, v string) refusal {
			return send(n, "PATCH", "/v1/teams/"+team, map[string]any{"name": v})
		}},
		{"PATCH /v1/teams/:id equipment", "equipment", false, func(n *node, v string) refusal {
			return send(n, "PATCH", "/v1/teams/"+team, map[string]any{"equipment": []string{v}})
		}},
		{"POST /v1/teams/:id/members name", "name", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/teams/"+team+"/members", map[string]any{"name": v})
		}},

		// users
		{"POST /v1/tenant/users email", "email", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/tenant/users", map[string]any{"email": v + "@txt.example", "name": textMarker, "role": "api_user"})
		}},
		{"POST /v1/tenant/users name", "name", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/tenant/users", map[string]any{"email": next() + "@txt.example", "name": v, "role": "api_user"})
		}},
		{"PATCH /v1/tenant/users/:id name", "name", false, func(n *node, v string) refusal {
			return send(n, "PATCH", "/v1/tenant/users/"+user, map[string]any{"name": v})
		}},

		// API keys
		{"POST /v1/tenant/api-keys name", "name", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/tenant/api-keys", map[string]any{"name": v})
		}},
		{"POST /v1/tenant/api-keys scopes", "scopes", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/tenant/api-keys", map[string]any{"name": textMarker, "scopes": []string{v}})
		}},

		// webhooks
		{"POST /v1/webhooks url", "url", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/webhooks", map[string]any{"url": "https://127.0.0.1:9/" + v})
		}},
		{"POST /v1/webhooks events", "events", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/webhooks", map[string]any{"url": "https://127.0.0.1:9/" + textMarker, "events": []string{v}})
		}},
		{"PATCH /v1/webhooks/:id url", "url", false, func(n *node, v string) refusal {
			return send(n, "PATCH", "/v1/webhooks/"+hook, map[string]any{"url": "https://127.0.0.1:9/" + v})
		}},
		{"PATCH /v1/webhooks/:id events", "events", false, func(n *node, v string) refusal {
			return send(n, "PATCH", "/v1/webhooks/"+hook, map[string]any{"events": []string{v}})
		}},

		// devices
		{"POST /v1/devices/register name", "name", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/devices/register", map[string]any{"name": v, "platform": "android"})
		}},
		{"POST /v1/devices/register platform", "platform", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/devices/register", map[string]any{"name": textMarker, "platform": v})
		}},
		{"POST /v1/devices/register hardware_id", "hardware_id", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/devices/register", map[string]any{"name": textMarker, "platform": "android", "hardware_id": v})
		}},
		{"POST /v1/devices/register zone_code", "zone_code", false, func(n *node, v string) refusal {
			return send(n, "POST", "/v1/devices/register", map[string]any{"name": textMarker, "platform": "android", "zone_code": v})
		}},

		// upstream settings
		{"PUT /v1/tenant/upstream url", "url", false, func(n *node, v string) refusal {
			return send(n, "PUT", "/v1/tenant/upstream", map[string]any{"url": "https://central.example.org/" + v, "api_key": upstreamKey})
		}},
		{"PUT /v1/tenant/upstream api_key", "api_key", false, func(n *node, v string) refusal {
			return send(n, "PUT", "/v1/tenant/upstream", map[string]any{"url": "https://central.example.org/" + textMarker, "api_key": v})
		}},
	} {
		for _, r := range []rune{0x0000, 0xffff, 0x202e} {
			if row.header && r == 0 {
				continue // net/http refuses to send a control character in a header
			}
			v := textMarker + string(r) + "x"
			// The value as JSON writes it: a record or answer that holds it echoes it (an
			// error message quotes values Go-escaped, model.Quote).
			asJSON, _ := json.Marshal(v)
			t.Run(fmt.Sprintf("%s/%U", row.name, r), func(t *testing.T) {
				got := row.send(n.on(t), v)
				if got.status != http.StatusBadRequest || got.code != "validation_error" || got.field != row.field {
					t.Fatalf("%d %s on %q, want 400 validation_error on %q: %s", got.status, got.code, got.field, row.field, got.raw)
				}
				if bytes.Contains(got.raw, asJSON[1:len(asJSON)-1]) {
					t.Fatalf("the answer or the batch record holds the value: %s", got.raw)
				}
			})
		}
	}

	// Nothing of a refused request was stored: no record the tenant can read holds the
	// marker.
	for _, path := range []string{"/v1/events?limit=500", "/v1/zones?limit=500", "/v1/teams?limit=500",
		"/v1/tenant/users?limit=500", "/v1/tenant/api-keys?limit=500", "/v1/webhooks?limit=500",
		"/v1/devices?limit=500", "/v1/tenant/upstream"} {
		if res := n.do("GET", path, nil, admin...); bytes.Contains(res.raw, []byte(textMarker)) {
			t.Errorf("GET %s holds a refused value: %s", path, res.raw)
		}
	}
}
