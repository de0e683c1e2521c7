package e2e

// The console's session through the binary: POST /v1/auth/session sets the cookie,
// POST /v1/auth/refresh turns it into a token, and a logout, a suspension or a password
// change ends it at once.

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// post sends a body-less POST with the headers (name, value pairs) and answers the
// response (its body decoded).
func post(t *testing.T, n *served, path string, headers ...string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", n.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := n.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s: the body is not JSON: %v", path, err)
	}
	return res, out
}

// sessionCookie answers the session cookie a response sets, and fails without one.
func sessionCookie(t *testing.T, res *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == "fieldrelay_session" {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", res.Header.Values("Set-Cookie"))
	return nil
}

func TestConsoleSession(t *testing.T) {
	bin := binary(t)
	for _, tlsOn := range []bool{false, true} {
		data := t.TempDir()
		d := &demoNode{served: serve(t, bin, data, tlsOn, "--demo")}
		readDemo(t, d, data)
		sup := d.login(t, "operational_supervisor")

		// An API key has no session; a user's token starts one.
		res, body := post(t, d.served, "/v1/auth/session", d.key()...)
		expect(t, "a session for an API key", res.StatusCode, 403, body)
		res, body = post(t, d.served, "/v1/auth/session", sup...)
		expect(t, "a session", res.StatusCode, 200, body)
		if n, _ := body["expires_in"].(float64); n < 28700 || n > 28800 {
			t.Errorf("expires_in %v", body["expires_in"])
		}
		c := sessionCookie(t, res)
		raw := strings.Join(res.Header.Values("Set-Cookie"), "; ")
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/v1/auth/refresh" || c.Secure != tlsOn ||
			c.MaxAge < 28700 || c.MaxAge > 28800 {
			t.Errorf("the session cookie (TLS %v): %s", tlsOn, raw)
		}
		// The cookie is no bearer token.
		st, _, body := d.call(t, "GET", "/v1/tenant/me", nil, "Authorization", "Bearer "+c.Value)
		expect(t, "the cookie as a bearer token", st, 401, body)
		// Without the cookie, or from another site's page, no token.
		res, body = post(t, d.served, "/v1/auth/refresh")
		expect(t, "a refresh without cookie", res.StatusCode, 401, body)
		res, body = post(t, d.served, "/v1/auth/refresh", "Cookie", c.Name+"="+c.Value, "Sec-Fetch-Site", "same-site")
		expect(t, "a refresh from another origin", res.StatusCode, 403, body)

		// A reload: the cookie gives a token that works, with the user.
		res, body = post(t, d.served, "/v1/auth/refresh", "Cookie", c.Name+"="+c.Value, "Sec-Fetch-Site", "same-origin")
		expect(t, "a refresh", res.StatusCode, 200, body)
		tok := body["token"].(string)
		if u, _ := body["user"].(map[string]any); u["rbac_level"] != "operational_supervisor" {
			t.Errorf("the refreshed session's user: %v", body["user"])
		}
		st, _, body = d.call(t, "GET", "/v1/events", nil, "Authorization", "Bearer "+tok)
		expect(t, "the refreshed token", st, 200, body)

		// Logout ends it at once: the tokens and the cookie, and clears the cookie.
		res, body = post(t, d.served, "/v1/auth/logout", "Authorization", "Bearer "+tok)
		expect(t, "logout", res.StatusCode, 200, body)
		if cl := sessionCookie(t, res); cl.MaxAge >= 0 || cl.Value != "" {
			t.Errorf("logout does not clear the cookie: %v", res.Header.Values("Set-Cookie"))
		}
		for _, auth := range []string{tok, strings.TrimPrefix(sup[1], "Bearer ")} {
			st, _, body = d.call(t, "GET", "/v1/events", nil, "Authorization", "Bearer "+auth)
			expect(t, "a token after logout", st, 401, body)
		}
		res, body = post(t, d.served, "/v1/auth/refresh", "Cookie", c.Name+"="+c.Value)
		expect(t, "a refresh after logout", res.StatusCode, 401, body)
		if cl := sessionCookie(t, res); cl.MaxAge >= 0 {
			t.Errorf("a refused refresh does not clear the cookie: %v", res.Header.Values("Set-Cookie"))
		}
		if tlsOn {
			break
		}

		// A suspension ends a session at once, and so does a password change.
		sup = d.login(t, "operational_supervisor")
		res, _ = post(t, d.served, "/v1/auth/session", sup...)
		c = sessionCookie(t, res)
		admin := d.login(t, "company_admin")
		st, _, users := d.call(t, "GET", "/v1/tenant/users", nil, admin...)
		expect(t, "users", st, 200, users)
		var id string
		for _, u := range users["data"].([]any) {
			if u := u.(map[string]any); u["rbac_level"] == "operational_supervisor" {
				id = u["id"].(string)
			}
		}
		st, _, body = d.call(t, "PATCH", "/v1/tenant/users/"+id, map[string]any{"status": "suspended"}, admin...)
		expect(t, "suspend", st, 200, body)
		res, body = post(t, d.served, "/v1/auth/refresh", "Cookie", c.Name+"="+c.Value)
		expect(t, "a refresh after the suspension", res.StatusCode, 401, body)
		st, _, body = d.call(t, "PATCH", "/v1/tenant/users/"+id, map[string]any{"status": "active"}, admin...)
		expect(t, "reactivate", st, 200, body)

		tech := d.login(t, "company_tech")
		res, _ = post(t, d.served, "/v1/auth/session", tech...)
		c = sessionCookie(t, res)
		_, pass := d.demoUser(t, "company_tech")
		st, _, body = d.call(t, "POST", "/v1/auth/change-password", map[string]any{"current_password": pass,
			"new_password": "another long passphrase"}, tech...)
		expect(t, "change password", st, 200, body)
		res, body = post(t, d.served, "/v1/auth/refresh", "Cookie", c.Name+"="+c.Value)
		expect(t, "a refresh after a password change", res.StatusCode, 401, body)
	}
}

// readDemo reads the demo's saved credentials of data into d.
func readDemo(t *testing.T, d *demoNode, data string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(data, "demo-credentials.json"))
	if err != nil || json.Unmarshal(raw, d) != nil || d.APIKey == "" {
		t.Fatalf("demo credentials: %v %s", err, raw)
	}
}
