package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestLogin(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	admin := f.emails["company_admin"]

	t.Run("OK", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/auth/login", map[string]string{"email": strings.ToUpper(admin), "password": testPassword}).want(http.StatusOK)
		if res.num("expires_in") != 28800 || res.str("token") == "" {
			t.Fatalf("login answer: %s", res.raw)
		}
		u := res.body["user"].(map[string]any)
		for _, k := range []string{"id", "email", "name", "rbac_level"} {
			if u[k] == nil || u[k] == "" {
				t.Fatalf("user.%s missing: %s", k, res.raw)
			}
		}
		if u["rbac_level"] != "company_admin" || u["email"] != admin {
			t.Fatalf("user: %v", u)
		}
		if _, ok := u["password_hash"]; ok {
			t.Fatal("login leaks the password hash")
		}
		n.do("GET", "/v1/tenant/me", nil, "Authorization", "Bearer "+res.str("token")).want(http.StatusOK)
	})
	t.Run("ErrMissingFields", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/auth/login", map[string]string{"password": "x"}).wantErr(400, "validation_error", "email")
		n.do("POST", "/v1/auth/login", map[string]string{"email": admin}).wantErr(400, "validation_error", "password")
		n.do("POST", "/v1/auth/login", map[string]any{"email": 5, "password": "x"}).wantErr(400, "validation_error", "email")
		n.do("POST", "/v1/auth/login", map[string]any{"email": admin, "password": true}).wantErr(400, "validation_error", "password")
	})
	t.Run("ErrWrongPasswordAndUnknownEmailAlike", func(t *testing.T) {
		n := n.on(t)
		a := n.do("POST", "/v1/auth/login", map[string]string{"email": admin, "password": "not the password"}).wantErr(401, "invalid_credentials")
		b := n.do("POST", "/v1/auth/login", map[string]string{"email": "ghost@acme.example", "password": "not the password"}).wantErr(401, "invalid_credentials")
		if a.str("message") != b.str("message") {
			t.Fatalf("messages differ: %q vs %q", a.str("message"), b.str("message"))
		}
		n.do("POST", "/v1/auth/login", map[string]string{"email": admin, "password": testPassword}).want(http.StatusOK)
	})
	t.Run("Lockout", func(t *testing.T) {
		n := n.on(t)
		email := f.emails["field_operator"]
		bad := map[string]string{"email": email, "password": "not the password"}
		for i := 1; i <= 5; i++ {
			n.do("POST", "/v1/auth/login", bad).wantErr(401, "invalid_credentials")
		}
		res := n.do("POST", "/v1/auth/login", map[string]string{"email": email, "password": testPassword}).wantErr(423, "account_locked")
		if ra, _ := strconv.Atoi(res.header.Get("Retry-After")); ra < 899 || ra > 900 {
			t.Fatalf("Retry-After %q, want about 900", res.header.Get("Retry-After"))
		}
		n.clock.Advance(15*time.Minute - time.Second)
		n.do("POST", "/v1/auth/login", map[string]string{"email": email, "password": testPassword}).wantErr(423, "account_locked")
		n.clock.Advance(time.Second)
		n.do("POST", "/v1/auth/login", map[string]string{"email": email, "password": testPassword}).want(http.StatusOK)
	})
	t.Run("LockoutOfUnknownEmail", func(t *testing.T) {
		n := n.on(t)
		bad := map[string]string{"email": "nobody@acme.example", "password": "not the password"}
		for i := 1; i <= 5; i++ {
			n.do("POST", "/v1/auth/login", bad).wantErr(401, "invalid_credentials")
		}
		n.do("POST", "/v1/auth/login", bad).wantErr(423, "account_locked")
	})
	t.Run("ErrSuspendedAccount", func(t *testing.T) {
		n := n.on(t)
		email := f.emails["api_user"]
		token := n.login(email)
		id := n.do("GET", "/v1/tenant/users?limit=500", nil, "Authorization", n.login(admin))
		userID := findUser(t, id, email)
		n.do("PATCH", "/v1/tenant/users/"+userID, map[string]string{"status": "suspended"}, "Authorization", n.login(admin)).want(200)
		n.do("GET", "/v1/tenant/me", nil, "Authorization", token).wantErr(401, "unauthorized")
		n.do("POST", "/v1/auth/login", map[string]string{"email": email, "password": testPassword}).wantErr(403, "account_suspended")
		n.do("POST", "/v1/auth/login", map[string]string{"email": email, "password": "wrong one!!"}).wantErr(401, "invalid_credentials")
	})
}

func findUser(t *testing.T, list *response, email string) string {
	t.Helper()
	for _, u := range list.body["data"].([]any) {
		m := u.(map[string]any)
		if m["email"] == email {
			return m["id"].(string)
		}
	}
	t.Fatalf("user %s not listed", email)
	return ""
}

func TestCredentials(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	g := n.addTenant("other", "core")
	token := n.login(f.emails["company_admin"])

	t.Run("ErrNone", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/tenant/me", nil).wantErr(401, "unauthorized")
	})
	t.Run("ErrBadKey", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", "fr_live_nope").wantErr(401, "unauthorized")
		n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", "fr_live_"+strings.Repeat("A", 32)).wantErr(401, "unauthorized")
		if n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", "fr_live_nope").header.Get("x-ratelimit-limit") != "" {
			t.Fatal("rate-limit headers on a request with no tenant")
		}
	})
	t.Run("HeaderNameIsCaseInsensitive", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/tenant/me", nil, "X-SVC-API-KEY", f.key).want(200)
	})
	t.Run("KeyWinsOverBearer", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", g.key, "Authorization", token).want(200)
		if res.str("id") != g.tenant.ID {
			t.Fatal("the bearer token won over the API key")
		}
	})
	t.Run("TenantComesFromCredentials", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/tenant/me?tenant_id="+g.tenant.ID, nil, "Authorization", token).want(200)
		if res.str("id") != f.tenant.ID {
			t.Fatal("a query parameter chose the tenant")
		}
	})
	t.Run("ErrBadBearer", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/tenant/me", nil, "Authorization", "Bearer garbage").wantErr(401, "unauthorized")
		n.do("GET", "/v1/tenant/me", nil, "Authorization", "Basic Zm9vOmJhcg==").wantErr(401, "unauthorized")
		n.do("GET", "/v1/tenant/me", nil, "Authorization", token+"x").wantErr(401, "unauthorized")
	})
	t.Run("ErrOtherAlgorithms", func(t *testing.T) {
		n := n.on(t)
		parts := strings.Split(strings.TrimPrefix(token, "Bearer "), ".")
		claims, _, _ := jwt.NewParser().ParseUnverified(strings.TrimPrefix(token, "Bearer "), jwt.MapClaims{})
		none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, claims.Claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
		n.do("GET", "/v1/tenant/me", nil, "Authorization", "Bearer "+none).wantErr(401, "unauthorized")
		hs512, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, claims.Claims).SignedString([]byte("guess"))
		n.do("GET", "/v1/tenant/me", nil, "Authorization", "Bearer "+hs512).wantErr(401, "unauthorized")
		if len(parts) != 3 {
			t.Fatal("token is not a JWT")
		}
	})
	t.Run("ErrExpired", func(t *testing.T) {
		n := n.on(t)
		tok := n.login(f.emails["corporate_client"])
		n.clock.Advance(8*time.Hour - time.Second)
		n.do("GET", "/v1/tenant/me", nil, "Authorization", tok).want(200)
		n.clock.Advance(time.Second)
		n.do("GET", "/v1/tenant/me", nil, "Authorization", tok).wantErr(401, "token_expired")
	})
}

func TestChangePassword(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	email := f.emails["operational_supervisor"]
	token := n.login(email)
	const newPW = "a brand new secret"

	t.Run("ErrValidation", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/auth/change-password", map[string]any{"new_password": newPW}, "Authorization", token).wantErr(400, "validation_error", "current_password")
		n.do("POST", "/v1/auth/change-password", map[string]any{"current_password": testPassword}, "Authorization", token).wantErr(400, "validation_error", "new_password")
		n.do("POST", "/v1/auth/change-password", map[string]any{"current_password": testPassword, "new_password": "short"}, "Authorization", token).wantErr(400, "validation_error", "new_password")
		n.do("POST", "/v1/auth/change-password", map[string]any{"current_password": testPassword, "new_password": 12345678901}, "Authorization", token).wantErr(400, "validation_error", "new_password")
	})
	t.Run("ErrWrongCurrent", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/auth/change-password", map[string]any{"current_password": "not it at all", "new_password": newPW}, "Authorization", token).wantErr(401, "invalid_credentials")
	})
	t.Run("ErrAPIKey", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/auth/change-password", map[string]any{"current_password": testPassword, "new_password": newPW}, "x-svc-api-key", f.key).wantErr(403, "forbidden")
	})
	t.Run("OK", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/auth/change-password", map[string]any{"current_password": testPassword, "new_password": newPW}, "Authorization", token).want(200)
		n.do("GET", "/v1/tenant/me", nil, "Authorization", token).wantErr(401, "unauthorized")
		n.do("POST", "/v1/auth/login", map[string]string{"email": email, "password": testPassword}).wantErr(401, "invalid_credentials")
		n.do("POST", "/v1/auth/login", map[string]string{"email": email, "password": newPW}).want(200)
	})
}

func TestPasswordReset(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	email := f.emails["field_operator"]
	const newPW = "reset to this one"

	n.do("POST", "/v1/auth/forgot-password", map[string]string{"email": "ghost@acme.example"}).want(http.StatusAccepted)
	for i := 0; i < 5; i++ {
		n.do("POST", "/v1/auth/login", map[string]string{"email": email, "password": "not the password"})
	}
	n.do("POST", "/v1/auth/login", map[string]string{"email": email, "password": testPassword}).wantErr(423, "account_locked")
	old := n.do("POST", "/v1/auth/forgot-password", map[string]string{"email": email}).want(http.StatusAccepted)
	if old.body["accepted"] != true {
		t.Fatalf("forgot-password answer: %s", old.raw)
	}
	n.eng.RunDue(context.Background()) // the mail goes through the outbox
	tok := n.mailer.last(t, "reset")
	n.do("POST", "/v1/auth/reset-password", map[string]string{"token": tok, "new_password": "short"}).wantErr(400, "validation_error", "new_password")
	n.do("POST", "/v1/auth/reset-password", map[string]string{"new_password": newPW}).wantErr(400, "validation_error", "token")
	n.do("POST", "/v1/auth/reset-password", map[string]string{"token": tok, "new_password": newPW}).want(200)
	n.do("POST", "/v1/auth/reset-password", map[string]string{"token": tok, "new_password": newPW}).wantErr(401, "unauthorized")
	n.do("POST", "/v1/auth/login", map[string]string{"email": email, "password": newPW}).want(200)

	t.Run("ErrExpiredToken", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/auth/forgot-password", map[string]string{"email": email}).want(http.StatusAccepted)
		n.eng.RunDue(context.Background()) // the mail goes through the outbox
		tok := n.mailer.last(t, "reset")
		n.clock.Advance(time.Hour)
		n.do("POST", "/v1/auth/reset-password", map[string]string{"token": tok, "new_password": newPW + "!"}).wantErr(401, "unauthorized")
	})
}
