package cli

import (
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/fieldrelay/fieldrelay/store"
)

// TestUpstreamCommands: upstream set, show, pause and resume on the store and through the
// admin socket; bad input names its flag's field; no output and no byte of the database
// holds the key.
func TestUpstreamCommands(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme")
	key := "fr_live_CENTRALcentralCENTRALcentral0000"
	key2 := "fr_live_SECONDsecondSECONDsecondSECOND00"
	ss, err := server.EnsureSelfSigned(filepath.Join(t.TempDir(), "tls"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var outputs []string
	set := func(stdin string, args ...string) admin.UpstreamResult {
		t.Helper()
		r := runJSON[admin.UpstreamResult](t, a, stdin, append([]string{"upstream", "set", "--data", data, "--tenant", "acme"}, args...)...)
		outputs = append(outputs, mustRun(t, a, "", "upstream", "show", "--data", data, "--tenant", "acme"))
		return r
	}

	t.Run("Local", func(t *testing.T) {
		if r := runJSON[admin.UpstreamResult](t, a, "", "upstream", "show", "--data", data, "--tenant", "acme"); r.Upstream != nil ||
			r.Status.State != engine.UpstreamUnconfigured {
			t.Fatalf("before: %+v", r)
		}
		r := set("", "--url", "https://central.example.org/", "--api-key", key, "--ca", ss.CertFile)
		if r.Upstream.URL != "https://central.example.org" || r.Upstream.APIKeyPrefix != key[:12]+"…" ||
			r.Upstream.CAPEM == nil || !strings.Contains(*r.Upstream.CAPEM, "BEGIN CERTIFICATE") || r.Status.State != engine.UpstreamIdle {
			t.Fatalf("set: %+v %+v", r.Upstream, r.Status)
		}
		text := outputs[len(outputs)-1]
		for _, want := range []string{"https://central.example.org", key[:12] + "…", "State:      idle", "a root certificate"} {
			if !strings.Contains(text, want) {
				t.Fatalf("show does not say %q:\n%s", want, text)
			}
		}
		p := runJSON[admin.UpstreamResult](t, a, "", "upstream", "pause", "--data", data, "--tenant", "acme")
		if !p.Upstream.Paused || p.Status.State != engine.UpstreamPaused {
			t.Fatalf("pause: %+v", p)
		}
		r = runJSON[admin.UpstreamResult](t, a, "", "upstream", "resume", "--data", data, "--tenant", "acme")
		if r.Upstream.Paused || r.Status.State != engine.UpstreamIdle || r.Upstream.CAPEM == nil {
			t.Fatalf("resume: %+v", r)
		}
		// The key from stdin, so that it shows in no process list.
		r = set(key2+"\n", "--url", "https://central.example.org", "--api-key", "-")
		if r.Upstream.APIKeyPrefix != key2[:12]+"…" || r.Upstream.CAPEM == nil {
			t.Fatalf("stdin key: %+v", r.Upstream)
		}
	})
	t.Run("BadInput", func(t *testing.T) {
		for _, tc := range []struct {
			args        []string
			code, field string
		}{
			{[]string{"upstream", "set", "--tenant", "nope", "--url", "https://c.example.org", "--api-key", key}, "not_found", ""},
			{[]string{"upstream", "set", "--tenant", "acme", "--url", "http://c.example.org", "--api-key", key}, "validation_error", "url"},
			{[]string{"upstream", "set", "--tenant", "acme", "--url", "c.example.org", "--api-key", key}, "validation_error", "url"},
			{[]string{"upstream", "set", "--tenant", "acme", "--url", "https://c.example.org"}, "validation_error", "api_key"},
			{[]string{"upstream", "set", "--tenant", "acme", "--url", "https://c.example.org", "--api-key", key, "--ca", "/nonexistent.pem"}, "validation_error", "ca"},
			{[]string{"upstream", "set", "--url", "https://c.example.org", "--api-key", key}, "validation_error", "tenant"},
			{[]string{"upstream", "show", "--tenant", "nope"}, "not_found", ""},
			{[]string{"upstream", "pause", "--tenant", "nope"}, "not_found", ""},
		} {
			e := runJSONError(t, a, "", append(tc.args, "--data", data)...)
			if e.Error != tc.code || e.Field != tc.field || strings.Contains(e.Message, key[12:]) {
				t.Errorf("%v: %+v", tc.args, e)
			}
		}
		other := t.TempDir()
		createTenant(t, a, other, "beta")
		if e := runJSONError(t, a, "", "upstream", "pause", "--data", other, "--tenant", "beta"); e.Error != "not_found" {
			t.Errorf("pause without an upstream: %+v", e)
		}
	})
	t.Run("ThroughSocket", func(t *testing.T) {
		srv := startFakeServer(t, data)
		r := set("", "--url", "https://central2.example.org", "--api-key", key)
		p := runJSON[admin.UpstreamResult](t, a, "", "upstream", "pause", "--data", data, "--tenant", "acme")
		if r.Upstream.URL != "https://central2.example.org" || r.Upstream.CAPEM != nil || !p.Upstream.Paused {
			t.Fatalf("through the socket: %+v %+v", r.Upstream, p.Upstream)
		}
		if ran := srv.ran(); !slices.Contains(ran, admin.OpUpstreamSet) || !slices.Contains(ran, admin.OpUpstreamPause) {
			t.Fatalf("the server ran %v", ran)
		}
	})
	file, err := os.ReadFile(store.Path(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{key, key2} {
		if strings.Contains(string(file), k[12:]) {
			t.Errorf("the database file holds the key %s…", k[:12])
		}
		for _, out := range outputs {
			if strings.Contains(out, k[12:]) {
				t.Errorf("an output holds the key %s…:\n%s", k[:12], out)
			}
		}
	}
}
