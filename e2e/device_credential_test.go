package e2e

import (
	"strings"
	"testing"
)

// TestField_DeviceCredential: through the binary, a field operator registers a phone of
// its team and gets the phone's credential. The credential syncs that device and reads
// its queue, and nothing else: not another device, not the API's other routes, not a new
// credential. An admin revokes it over the API: its very next sync is refused; a new
// credential works and the one it replaced does not; `fieldrelay device revoke` (through
// the running node's admin socket) refuses that one at once too. Admins list the devices
// (GET /v1/devices, `fieldrelay device list`) with their credentials' state. It runs on
// both stores.
func TestField_DeviceCredential(t *testing.T) {
	bin := binary(t)
	eachStore(t, func(t *testing.T, st nodeStore) { deviceCredential(t, bin, st) })
}

func deviceCredential(t *testing.T, bin string, store nodeStore) {
	s := store.serveDemo(t, bin)
	op, admin := s.login(t, "field_operator"), s.login(t, "company_admin")
	teamID := demoTeam(t, s, "SAMU Lyon 1", admin)

	register := func(hw string) string {
		t.Helper()
		status, _, body := s.call(t, "POST", "/v1/devices/register", map[string]any{"name": "phone " + hw,
			"platform": "web", "team_id": teamID, "hardware_id": hw}, op...)
		expect(t, "register", status, 201, body)
		return body["device_id"].(string)
	}
	phone, other := register("pwa-1"), register("pwa-2")
	issue := func(device string) []string {
		t.Helper()
		status, _, body := s.call(t, "POST", "/v1/devices/"+device+"/credential", nil, op...)
		expect(t, "credential", status, 201, body)
		if body["device_id"] != device || body["expires_at"] == nil {
			t.Fatalf("credential answer: %v", body)
		}
		if c := body["device"].(map[string]any)["credential"].(map[string]any); c["revoked_at"] != nil {
			t.Fatalf("a new credential is revoked: %v", c)
		}
		return []string{"Authorization", "Bearer " + body["credential"].(string)}
	}
	cred := issue(phone)
	sync := func(what string, device string, want int, headers []string) map[string]any {
		t.Helper()
		status, _, body := s.call(t, "POST", "/v1/devices/sync", map[string]any{"device_id": device, "items": []any{
			map[string]any{"sequence_number": 1, "kind": "connectivity", "captured_at": "2026-01-01T00:00:00Z",
				"payload": map[string]any{"zone_code": "lyon", "state": "online"}}}}, headers...)
		expect(t, what, status, want, body)
		return body
	}
	body := sync("sync with the device credential", phone, 200, cred)
	if r := body["results"].([]any)[0].(map[string]any); r["status"] != "applied" {
		t.Fatalf("the device credential's item: %v", r)
	}
	status, _, body := s.call(t, "GET", "/v1/devices/"+phone+"/queue", nil, cred...)
	expect(t, "queue", status, 200, body)

	// Nothing but its own device's sync and queue.
	sync("another device", other, 404, cred)
	status, _, body = s.call(t, "GET", "/v1/devices/"+other+"/queue", nil, cred...)
	expect(t, "another device's queue", status, 404, body)
	for _, c := range []struct{ method, path string }{{"GET", "/v1/missions"}, {"GET", "/v1/events"},
		{"POST", "/v1/devices/" + phone + "/credential"}, {"GET", "/v1/stream"}, {"GET", "/v1/tenant/me"},
		{"POST", "/v1/devices/register"}} {
		status, _, body = s.call(t, c.method, c.path, nil, cred...)
		expect(t, c.method+" "+c.path+" with a device credential", status, 403, body)
	}

	// Admins list the devices with their credentials' state; a field operator may not.
	status, _, body = s.call(t, "GET", "/v1/devices", nil, admin...)
	expect(t, "devices", status, 200, body)
	listed := map[string]map[string]any{}
	for _, it := range body["data"].([]any) {
		d := it.(map[string]any)
		listed[d["device_id"].(string)] = d
	}
	if c, _ := listed[phone]["credential"].(map[string]any); len(listed) != 2 || c == nil || c["revoked_at"] != nil || listed[other]["credential"] != nil {
		t.Fatalf("devices: %v", body)
	}
	status, _, body = s.call(t, "GET", "/v1/devices", nil, op...)
	expect(t, "devices as a field operator", status, 403, body)

	// Only devices:manage revokes; the revoked credential is refused at once.
	status, _, body = s.call(t, "DELETE", "/v1/devices/"+phone+"/credential", nil, op...)
	expect(t, "revoke by the field operator", status, 403, body)
	status, _, body = s.call(t, "DELETE", "/v1/devices/"+phone+"/credential", nil, admin...)
	expect(t, "revoke", status, 200, body)
	if body["id"] != phone || body["deleted"] != true {
		t.Fatalf("revoke answer: %v", body)
	}
	body = sync("sync after the revocation", phone, 401, cred)
	if !strings.Contains(body["message"].(string), "revoked") {
		t.Fatalf("refusal: %v", body)
	}

	// A new credential works; the one it replaced does not.
	first := issue(phone)
	second := issue(phone)
	sync("sync with the replaced credential", phone, 401, first)
	sync("sync with the new credential", phone, 200, second)

	// The command line revokes it, through the running node.
	out := store.cli(t, bin, "", "device", "revoke", "--tenant", "demo", "--device", phone)
	if !strings.Contains(string(out), "credential revoked") {
		t.Fatalf("device revoke: %s", out)
	}
	sync("sync after device revoke", phone, 401, second)
	out = store.cli(t, bin, "", "device", "list", "--tenant", "demo")
	if !strings.Contains(string(out), phone) || !strings.Contains(string(out), "revoked") || !strings.Contains(string(out), other) {
		t.Fatalf("device list: %s", out)
	}
	store.cli(t, bin, "", "device", "revoke", "--tenant", "demo", "--device", phone) // again: no change, no error
}

// demoTeam returns the id of the demo team called name.
func demoTeam(t *testing.T, s *demoNode, name string, headers []string) string {
	t.Helper()
	status, _, body := s.call(t, "GET", "/v1/teams", nil, headers...)
	expect(t, "teams", status, 200, body)
	for _, it := range body["data"].([]any) {
		if tm := it.(map[string]any); tm["name"] == name {
			return tm["id"].(string)
		}
	}
	t.Fatalf("no team %s: %v", name, body)
	return ""
}
