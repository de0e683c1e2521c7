package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server/servertest"
)

// TestServeSMTPResetFlow runs serve with --smtp-*: forgot-password mails the token (and
// does not log it), the token works once, a reset lifts the login lock, and no token or
// password reaches the log.
func TestServeSMTPResetFlow(t *testing.T) {
	s := servertest.StartSMTP(t)
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme")
	const email, pw, newPW = "ann@acme.example", "first password 1", "second password 2"
	mustRun(t, a, "", "user", "create", "--data", data, "--tenant", "acme", "--email", email, "--name", "Ann",
		"--role", "company_admin", "--password", pw)
	srv := startServe(t, a, "--data", data, "--plain-http", "--smtp-host", "127.0.0.1", "--smtp-port", strconv.Itoa(s.Port),
		"--smtp-from", "noreply@fieldrelay.test", "--smtp-user", "relay", "--smtp-password", "relay-secret-pw")
	post := func(path string, body any) int {
		raw, _ := json.Marshal(body)
		res, err := http.Post(srv.base+path, "application/json", bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for range 5 {
		post("/v1/auth/login", map[string]string{"email": email, "password": "not my password"})
	}
	if code := post("/v1/auth/login", map[string]string{"email": email, "password": pw}); code != http.StatusLocked {
		t.Fatalf("locked login: %d", code)
	}
	if code := post("/v1/auth/forgot-password", map[string]string{"email": email}); code != http.StatusAccepted {
		t.Fatalf("forgot-password: %d", code)
	}
	if code := post("/v1/auth/forgot-password", map[string]string{"email": "ghost@acme.example"}); code != http.StatusAccepted {
		t.Fatalf("forgot-password of nobody: %d", code)
	}
	mail := s.Next(t)
	token := mail.Token()
	if mail.To[0] != email || token == "" {
		t.Fatalf("mail: %+v", mail)
	}
	if code := post("/v1/auth/reset-password", map[string]string{"token": token, "new_password": newPW}); code != http.StatusOK {
		t.Fatalf("reset: %d", code)
	}
	if code := post("/v1/auth/reset-password", map[string]string{"token": token, "new_password": newPW + "x"}); code != http.StatusUnauthorized {
		t.Fatalf("second use of the token: %d", code)
	}
	if code := post("/v1/auth/login", map[string]string{"email": email, "password": newPW}); code != http.StatusOK {
		t.Fatalf("login after the reset (the lock is lifted): %d", code)
	}
	if extra, ok := s.Pending(); ok {
		t.Fatalf("a mail for nobody: %+v", extra)
	}
	if srv.shutdown(t) != 0 {
		t.Fatalf("serve exit\n%s", srv.stderr)
	}
	logs := srv.stderr.String() + srv.stdout.String()
	for what, secret := range map[string]string{"token": token, "password": pw, "new password": newPW, "smtp password": "relay-secret-pw"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds the %s", what)
		}
	}
}

func TestServeAdminFlagErrors(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	dir := t.TempDir()
	bad := dir + "/bad.json"
	for name, content := range map[string]string{
		"bad.json":       `{"default": {"currency": "EUR"`,
		"nodefault.json": `{"FR": {"currency": "EUR", "plans": {}, "channel_costs": {}}}`,
	} {
		if err := os.WriteFile(dir+"/"+name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]struct {
		args []string
		msg  string
	}{
		"MalformedPlans":   {[]string{"--plans-file", bad}, "--plans-file"},
		"PlansNoDefault":   {[]string{"--plans-file", dir + "/nodefault.json"}, `"default"`},
		"MissingPlans":     {[]string{"--plans-file", dir + "/nope.json"}, "--plans-file"},
		"SMTPWithoutFrom":  {[]string{"--smtp-host", "127.0.0.1"}, "--smtp-from"},
		"SMTPUserOnly":     {[]string{"--smtp-host", "127.0.0.1", "--smtp-from", "a@b.example", "--smtp-user", "u"}, "--smtp-user"},
		"SMTPWithoutHost":  {[]string{"--smtp-from", "a@b.example"}, "--smtp-host"},
		"SMTPPort":         {[]string{"--smtp-host", "h", "--smtp-from", "a@b.example", "--smtp-port", "0"}, "--smtp-port"},
		"BackupEveryShort": {[]string{"--backup-every", "10s"}, "--backup-every"},
		"BackupKeep":       {[]string{"--backup-every", "1h", "--backup-keep", "0"}, "--backup-keep"},
		"LogLinksWithSMTP": {[]string{"--smtp-host", "h", "--smtp-from", "a@b.example", "--log-reset-links"}, "--log-reset-links"},
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, a, "", append([]string{"serve", "--data", data, "--plain-http", "--addr", "127.0.0.1:0"}, c.args...)...)
			if r.code != 1 || !strings.HasPrefix(r.stderr, "error: ") || !strings.Contains(r.stderr, c.msg) {
				t.Fatalf("got %d %q", r.code, r.stderr)
			}
		})
	}
}

func TestParsePlansFile(t *testing.T) {
	good, _ := json.Marshal(engine.DefaultPlans())
	if _, err := engine.ParsePlans(good); err != nil {
		t.Fatalf("the compiled-in list does not read back: %v", err)
	}
	for name, mutate := range map[string]func(model.PlanTable){
		"Country":  func(p model.PlanTable) { p["fr"] = p["FR"] },
		"Currency": func(p model.PlanTable) { c := p["FR"]; c.Currency = "euro"; p["FR"] = c },
		"Plan": func(p model.PlanTable) {
			c := p["FR"]
			c.Plans = map[string]model.PlanPrice{"starter": {}, "core": {}, "gold": {}}
			p["FR"] = c
		},
		"Negative": func(p model.PlanTable) {
			c := p["FR"]
			c.Plans = map[string]model.PlanPrice{"starter": {MonthlyFee: -1}, "core": {}, "mission-critical": {}}
			p["FR"] = c
		},
		"Channel": func(p model.PlanTable) {
			c := p["FR"]
			c.ChannelCosts = map[string]float64{"rest_full": 0, "sms": 0, "pigeon": 1}
			p["FR"] = c
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := engine.DefaultPlans()
			mutate(p)
			raw, _ := json.Marshal(p)
			if _, err := engine.ParsePlans(raw); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := engine.ParsePlans([]byte(`{"default": {"currency": "EUR", "plans": {}, "channel_costs": {}, "extra": 1}}`)); err == nil {
		t.Fatal("an unknown field was accepted")
	}
}
