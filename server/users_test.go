package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

func TestUsers(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	g := n.addTenant("other", "core")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	const path = "/v1/tenant/users"

	t.Run("CreateActive", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", path, map[string]any{"email": "New.Person@Acme.example", "name": " New Person ",
			"role": "field_operator", "password": "long enough pw"}, admin...).want(http.StatusCreated)
		if res.str("email") != "new.person@acme.example" || res.str("name") != "New Person" || res.str("status") != "active" ||
			res.str("rbac_level") != "field_operator" || res.str("tenant_id") != f.tenant.ID {
			t.Fatalf("user: %s", res.raw)
		}
		if strings.Contains(string(res.raw), "password") {
			t.Fatalf("the answer names a password: %s", res.raw)
		}
		n.do("POST", "/v1/auth/login", map[string]string{"email": "new.person@acme.example", "password": "long enough pw"}).want(200)
	})
	t.Run("CreatePendingThenVerify", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", path, map[string]any{"email": "pending@acme.example", "name": "P", "role": "api_user"}, admin...).want(http.StatusCreated)
		if res.str("status") != "pending" {
			t.Fatalf("status %q", res.str("status"))
		}
		n.eng.RunDue(context.Background()) // the mail goes through the outbox
		tok := n.mailer.last(t, "verify")
		n.do("POST", "/v1/auth/verify", map[string]string{"token": tok}).wantErr(400, "validation_error", "password")
		n.do("POST", "/v1/auth/verify", map[string]string{"token": tok, "password": "my own password"}).want(200)
		n.do("POST", "/v1/auth/verify", map[string]string{"token": tok, "password": "my own password"}).wantErr(401, "unauthorized")
		n.do("POST", "/v1/auth/login", map[string]string{"email": "pending@acme.example", "password": "my own password"}).want(200)
	})
	t.Run("ErrValidation", func(t *testing.T) {
		n := n.on(t)
		ok := map[string]any{"email": "x@acme.example", "name": "X", "role": "api_user", "password": "long enough pw"}
		with := func(k string, v any) map[string]any {
			m := map[string]any{}
			for a, b := range ok {
				m[a] = b
			}
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
			return m
		}
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{with("email", nil), "email"},
			{with("email", 7), "email"},
			{with("email", "not-an-email"), "email"},
			{with("email", strings.Repeat("a", 250)+"@x.example"), "email"},
			{with("name", nil), "name"},
			{with("name", "   "), "name"},
			{with("name", []string{"x"}), "name"},
			{with("name", strings.Repeat("n", 201)), "name"},
			{with("role", nil), "role"},
			{with("role", "root"), "role"},
			{with("role", 3), "role"},
			{with("password", "short"), "password"},
			{with("password", 1234567890123), "password"},
			{with("password", strings.Repeat("p", 257)), "password"},
		} {
			n.do("POST", path, c.body, admin...).wantErr(400, "validation_error", c.field)
		}
		list := n.do("GET", path+"?limit=500", nil, admin...)
		for _, u := range list.body["data"].([]any) {
			if u.(map[string]any)["email"] == "x@acme.example" {
				t.Fatal("a rejected request stored a user")
			}
		}
	})
	t.Run("ErrDuplicateEmailAcrossTenants", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", path, map[string]any{"email": g.emails["api_user"], "name": "Dup", "role": "api_user",
			"password": "long enough pw"}, admin...).wantErr(409, "conflict")
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		n := n.on(t)
		for _, role := range []string{"company_tech", "operational_supervisor", "field_operator", "corporate_client", "api_user"} {
			n.do("GET", path, nil, "Authorization", n.login(f.emails[role])).wantErr(403, "forbidden")
		}
		n.do("GET", path, nil, "x-svc-api-key", f.key).wantErr(403, "forbidden")
	})
	t.Run("ListPaging", func(t *testing.T) {
		n := n.on(t)
		all := n.do("GET", path, nil, admin...).want(200)
		total := int(all.num("count"))
		if total != 8 {
			t.Fatalf("count %d, want 8: %s", total, all.raw)
		}
		var seen []string
		cursor := ""
		for pages := 0; ; pages++ {
			q := path + "?limit=3"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			res := n.do("GET", q, nil, admin...).want(200)
			for _, u := range res.body["data"].([]any) {
				seen = append(seen, u.(map[string]any)["id"].(string))
			}
			if res.num("count") != float64(len(res.body["data"].([]any))) {
				t.Fatal("count differs from the number of items")
			}
			cursor = res.str("next_cursor")
			if cursor == "" {
				break
			}
			if pages > 5 {
				t.Fatal("paging does not end")
			}
		}
		if len(seen) != total {
			t.Fatalf("paged %d users, listed %d", len(seen), total)
		}
		for i := 1; i < len(seen); i++ {
			if seen[i] >= seen[i-1] {
				t.Fatal("not newest first")
			}
		}
		n.do("GET", path+"?limit=0", nil, admin...).wantErr(400, "validation_error", "limit")
		n.do("GET", path+"?limit=abc", nil, admin...).wantErr(400, "validation_error", "limit")
		n.do("GET", path+"?cursor=!!!", nil, admin...).wantErr(400, "validation_error", "cursor")
		n.do("GET", path+"?cursor=bm9wZQ", nil, admin...).wantErr(400, "validation_error", "cursor")
		n.do("GET", path+"?limit=100000", nil, admin...).want(200)
	})
	t.Run("Update", func(t *testing.T) {
		n := n.on(t)
		email := f.emails["corporate_client"]
		id := findUser(t, n.do("GET", path, nil, admin...), email)
		token := n.login(email)
		res := n.do("PATCH", path+"/"+id, map[string]any{"role": "api_user", "name": "Renamed"}, admin...).want(200)
		if res.str("rbac_level") != "api_user" || res.str("name") != "Renamed" {
			t.Fatalf("user: %s", res.raw)
		}
		n.do("GET", "/v1/tenant/me", nil, "Authorization", token).wantErr(401, "unauthorized")
		token = n.login(email)
		n.do("PATCH", path+"/"+id, map[string]any{"status": "suspended"}, admin...).want(200)
		n.do("GET", "/v1/tenant/me", nil, "Authorization", token).wantErr(401, "unauthorized")
		n.do("PATCH", path+"/"+id, map[string]any{"status": "active"}, admin...).want(200)
		n.do("GET", "/v1/tenant/me", nil, "Authorization", token).wantErr(401, "unauthorized")
		n.do("GET", "/v1/tenant/me", nil, "Authorization", n.login(email)).want(200)
	})
	t.Run("ErrUpdate", func(t *testing.T) {
		n := n.on(t)
		self := findUser(t, n.do("GET", path, nil, admin...), f.emails["company_admin"])
		other := findUser(t, n.do("GET", path, nil, "Authorization", n.login(g.emails["company_admin"])), g.emails["api_user"])
		n.do("PATCH", path+"/"+self, map[string]any{"status": "suspended"}, admin...).wantErr(409, "conflict")
		n.do("PATCH", path+"/"+self, map[string]any{"role": "api_user"}, admin...).wantErr(409, "conflict")
		n.do("PATCH", path+"/"+self, map[string]any{"name": "Me"}, admin...).want(200)
		n.do("PATCH", path+"/"+other, map[string]any{"name": "Stolen"}, admin...).wantErr(404, "not_found")
		n.do("PATCH", path+"/not-a-uuid", map[string]any{"name": "X"}, admin...).wantErr(404, "not_found")
		n.do("PATCH", path+"/"+self, map[string]any{"status": "deleted"}, admin...).wantErr(400, "validation_error", "status")
		n.do("PATCH", path+"/"+self, map[string]any{"status": true}, admin...).wantErr(400, "validation_error", "status")
		n.do("PATCH", path+"/"+self, map[string]any{"role": "god"}, admin...).wantErr(400, "validation_error", "role")
		n.do("PATCH", path+"/"+self, map[string]any{"name": ""}, admin...).wantErr(400, "validation_error", "name")
		n.do("PATCH", path+"/"+self, map[string]any{"name": 5}, admin...).wantErr(400, "validation_error", "name")
	})
}
