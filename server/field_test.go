package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/server"
)

// fieldBudget is the most the field app may weigh, uncompressed, with the console's
// files it shares.
const fieldBudget = 200 << 10

// TestFieldServed: /field/ is served like the console (strict CSP, revalidated, an ETag),
// /field redirects there, the manifest names what an installable app needs, the icons
// are PNGs of their size, and the service worker carries the app's version.
func TestFieldServed(t *testing.T) {
	n := newNode(t)
	res, body := get(t, n, "/field/")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		res.Header.Get("Content-Security-Policy") != server.ConsoleCSP || res.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("GET /field/: %d %v", res.StatusCode, res.Header)
	}
	if !strings.Contains(string(body), `<link rel="manifest" href="manifest.webmanifest">`) {
		t.Fatalf("index.html does not name the manifest: %s", body)
	}
	res, _ = get(t, n, "/field")
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/field/" {
		t.Fatalf("GET /field: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	res, body = get(t, n, "/field/manifest.webmanifest")
	var m struct {
		Name, ShortName, StartURL, Scope, Display string
		Icons                                     []struct{ Src, Sizes, Type string }
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/manifest+json" {
		t.Fatalf("manifest: %d %v", res.StatusCode, res.Header)
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(body, &m)
	if raw["start_url"] != "/field/" || raw["scope"] != "/field/" || raw["display"] != "standalone" ||
		raw["name"] == nil || raw["short_name"] == nil {
		t.Fatalf("manifest: %s", body)
	}
	sizes := map[string]bool{}
	for _, ic := range m.Icons {
		res, img := get(t, n, "/field/"+ic.Src)
		cfg, err := png.DecodeConfig(bytes.NewReader(img))
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/png" || err != nil ||
			ic.Sizes != fmt.Sprintf("%dx%d", cfg.Width, cfg.Height) {
			t.Fatalf("icon %s (%s): %d %v %+v", ic.Src, ic.Sizes, res.StatusCode, err, cfg)
		}
		sizes[ic.Sizes] = true
	}
	if !sizes["192x192"] || !sizes["512x512"] {
		t.Fatalf("icons: %v", sizes)
	}
	res, body = get(t, n, "/field/sw.js")
	if res.StatusCode != 200 || strings.Contains(string(body), "__FIELD_VERSION__") ||
		!regexp.MustCompile(`const VERSION = "[A-Za-z0-9_-]{12}";`).Match(body) {
		t.Fatalf("sw.js has no version: %d %.300s", res.StatusCode, body)
	}
	n.do("GET", "/field/nope.js", nil).wantErr(http.StatusNotFound, "not_found")
}

// TestFieldBundle holds the field app to the console's rules (nothing from another
// origin, no inline script or style, no eval or innerHTML) and to its budget, and checks
// that the service worker caches every file the app loads: each file of the bundle and
// each shared console file it imports.
func TestFieldBundle(t *testing.T) {
	files := server.FieldBundle()
	console := server.ConsoleBundle()
	sw := string(files["sw.js"])
	shell := regexp.MustCompile(`"(/(?:field|console|shared)/[^"]*)"`).FindAllStringSubmatch(sw[strings.Index(sw, "const SHELL"):], -1)
	cached := map[string]bool{}
	total := 0
	for _, m := range shell {
		p := m[1]
		cached[p] = true
		switch {
		case p == "/field/":
		case strings.HasPrefix(p, "/field/"):
			if _, ok := files[strings.TrimPrefix(p, "/field/")]; !ok {
				t.Errorf("sw.js caches %s, which is not in the bundle", p)
			}
		default:
			body, ok := console[strings.TrimPrefix(p, "/console/")]
			if !ok {
				t.Errorf("sw.js caches %s, which the console does not have", p)
			}
			total += len(body)
		}
	}
	for name, body := range files {
		total += len(body)
		if name != "sw.js" && !cached["/field/"+name] {
			t.Errorf("%s is not in the service worker's SHELL", name)
		}
	}
	// Every console module the app imports is cached.
	for name, body := range files {
		for _, m := range regexp.MustCompile(`from "(/(?:console|shared)/[^"]+)"`).FindAllStringSubmatch(string(body), -1) {
			if !cached[m[1]] {
				t.Errorf("%s imports %s, which the service worker does not cache", name, m[1])
			}
		}
	}
	// So is every shared module that a cached shared module imports.
	for p := range cached {
		if !strings.HasPrefix(p, "/shared/") {
			continue
		}
		for _, m := range regexp.MustCompile(`from "\./([^"]+)"`).FindAllStringSubmatch(string(console[p]), -1) {
			if !cached["/shared/"+m[1]] {
				t.Errorf("%s imports ./%s, which the service worker does not cache", p, m[1])
			}
		}
	}
	t.Logf("field app: %d files, %d bytes uncompressed with the shared console files", len(files), total)
	if total > fieldBudget {
		t.Errorf("the field app weighs %d bytes, over its budget of %d", total, fieldBudget)
	}
	external := regexp.MustCompile(`(?i)(\b(?:https?|wss?|ftp):|//)`) // a scheme, not "rows:"
	for name, body := range files {
		if strings.HasSuffix(name, ".png") {
			continue
		}
		code := stripComments(name, string(body))
		if loc := external.FindStringIndex(code); loc != nil {
			t.Errorf("%s names another origin outside a comment: …%s…", name, code[max(loc[0]-40, 0):min(loc[1]+40, len(code))])
		}
		switch {
		case strings.HasSuffix(name, ".html"):
			if m := regexp.MustCompile(`(?i)<script(?:[^>]*)>`).FindAllString(code, -1); len(m) != 1 || !strings.Contains(m[0], "src=") {
				t.Errorf("%s: every script must be a file: %v", name, m)
			}
			if regexp.MustCompile(`(?i)\sstyle=|\son[a-z]+=|<style`).MatchString(code) {
				t.Errorf("%s has inline style or handlers", name)
			}
		case strings.HasSuffix(name, ".js"):
			for _, bad := range []string{"eval(", "new Function", "innerHTML", "setAttribute(\"style\""} {
				if strings.Contains(code, bad) {
					t.Errorf("%s uses %s", name, bad)
				}
			}
		}
	}
}
