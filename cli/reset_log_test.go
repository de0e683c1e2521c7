package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tokenRE matches an account token: 32 random bytes, base64url without padding, and no
// longer run of such characters (a path of the test's temporary directory).
var tokenRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])([A-Za-z0-9_-]{43})(?:$|[^A-Za-z0-9_-])`)

// TestServeResetTokensStayOutOfTheLog: without SMTP, forgot-password logs that a token was
// issued (email, kind, the reset-link command), never the token; `--log-reset-links` (or
// FIELDRELAY_LOG_RESET_LINKS) logs it, and the logged
// token works (docs/decisions/0079-tokens-out-of-log.md).
func TestServeResetTokensStayOutOfTheLog(t *testing.T) {
	const email, pw, newPW = "ann@acme.example", "first password 1", "second password 2"
	// forgot runs a node with args and env, asks a reset for ann, and returns the log
	// lines about account tokens and the whole log.
	forgot := func(t *testing.T, env map[string]string, args ...string) ([]map[string]any, string, *runningServe) {
		a := newTestApp(env)
		data := t.TempDir()
		createTenant(t, a, data, "acme")
		mustRun(t, a, "", "user", "create", "--data", data, "--tenant", "acme", "--email", email, "--name", "Ann",
			"--role", "company_admin", "--password", pw)
		srv := startServe(t, a, append([]string{"--data", data, "--plain-http"}, args...)...)
		raw, _ := json.Marshal(map[string]string{"email": email})
		res, err := http.Post(srv.base+"/v1/auth/forgot-password", "application/json", bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusAccepted {
			t.Fatalf("forgot-password: %d", res.StatusCode)
		}
		// The mail goes through the outbox: the scheduler sends it just after the answer.
		deadline := time.Now().Add(10 * time.Second)
		for {
			logs := srv.stderr.String() + srv.stdout.String()
			var lines []map[string]any
			for _, l := range strings.Split(srv.stderr.String(), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && strings.HasPrefix(m["msg"].(string), "account token issued") {
					lines = append(lines, m)
				}
			}
			if len(lines) > 0 || time.Now().After(deadline) {
				return lines, logs, srv
			}
			<-time.After(10 * time.Millisecond)
		}
	}

	t.Run("NotLogged", func(t *testing.T) {
		lines, logs, _ := forgot(t, nil)
		if len(lines) != 1 || lines[0]["email"] != email || lines[0]["kind"] != "reset" ||
			lines[0]["reset_link"] != "fieldrelay user reset-link "+email {
			t.Fatalf("the log does not say a token was issued and how to get one: %v\n%s", lines, logs)
		}
		if _, ok := lines[0]["token"]; ok {
			t.Fatalf("the log line carries the token: %v", lines[0])
		}
		if m := tokenRE.FindStringSubmatch(logs); m != nil {
			t.Fatalf("something like a token is in the log: %q\n%s", m[1], logs)
		}
	})

	for name, c := range map[string]struct {
		env  map[string]string
		args []string
	}{
		"Flag": {nil, []string{"--log-reset-links"}},
		"Env":  {map[string]string{"FIELDRELAY_LOG_RESET_LINKS": "true"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			lines, logs, srv := forgot(t, c.env, c.args...)
			token, _ := lines[0]["token"].(string)
			if len(lines) != 1 || !tokenRE.MatchString(token) || !strings.Contains(logs, `"log_reset_links":true`) {
				t.Fatalf("the token is not logged: %v\n%s", lines, logs)
			}
			raw, _ := json.Marshal(map[string]string{"token": token, "new_password": newPW})
			res, err := http.Post(srv.base+"/v1/auth/reset-password", "application/json", bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("reset with the logged token: %d", res.StatusCode)
			}
		})
	}
}
