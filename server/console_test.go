package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
)

// consoleBudget is the most the embedded console may weigh, uncompressed.
const consoleBudget = 300 << 10

func get(t *testing.T, n *node, p string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", n.url+p, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := *n.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, body
}

func TestConsoleServed(t *testing.T) {
	n := newNode(t)
	res, body := get(t, n, "/console/")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /console/: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if !strings.Contains(string(body), `<script type="module" src="js/app.js">`) {
		t.Fatalf("index.html does not load the app: %s", body)
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "connect-src 'self'", "style-src 'self'",
		"object-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") || strings.Contains(csp, "http") || strings.Contains(csp, "*") {
		t.Errorf("CSP allows too much: %q", csp)
	}
	if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers: %v", res.Header)
	}
	if res.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id")
	}

	res, _ = get(t, n, "/console")
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/console/" {
		t.Fatalf("GET /console: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	res, body = get(t, n, "/console/js/app.js")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") ||
		res.Header.Get("Content-Security-Policy") != server.ConsoleCSP || len(body) == 0 {
		t.Fatalf("app.js: %d %v", res.StatusCode, res.Header)
	}
	etag := res.Header.Get("ETag")
	if res, _ := get(t, n, "/console/js/app.js", "If-None-Match", etag); etag == "" || res.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation with %q: %d", etag, res.StatusCode)
	}
	for _, p := range []string{"/shared/app.css", "/console/icon.svg", "/console/js/views/map.js"} {
		if res, _ := get(t, n, p); res.StatusCode != 200 {
			t.Errorf("%s: %d", p, res.StatusCode)
		}
	}
	n.do("GET", "/console/nope.js", nil).wantErr(http.StatusNotFound, "not_found")
	n.do("GET", "/console/../go.mod", nil).want(http.StatusNotFound)

	// roles.json is the engine's table, so the console never holds a stale copy.
	res, body = get(t, n, "/shared/roles.json")
	var roles struct{ Roles map[string][]string }
	if res.StatusCode != 200 || json.Unmarshal(body, &roles) != nil {
		t.Fatalf("roles.json: %d %s", res.StatusCode, body)
	}
	for _, r := range model.Roles {
		for _, p := range model.Permissions {
			if model.RoleHas(r, p) != slices.Contains(roles.Roles[r], p) {
				t.Errorf("roles.json: %s %s", r, p)
			}
		}
	}
}

// TestConsoleBundle holds the embedded files to the offline rule: nothing names another
// origin. URLs may only appear in comments, and the one allowed outside is the SVG
// namespace name, an identifier that is never fetched. It also checks the size budget
// and that no file has inline script or style.
func TestConsoleBundle(t *testing.T) {
	const svgNS = "http://www.w3.org/2000/svg"
	files := server.ConsoleBundle()
	names := make([]string, 0, len(files))
	total := 0
	for name, body := range files {
		names = append(names, name)
		total += len(body)
	}
	sort.Strings(names)
	for _, want := range []string{"index.html", "/shared/app.css", "js/app.js", "/shared/api.js", "js/stream.js", "/shared/roles.json"} {
		if _, ok := files[want]; !ok {
			t.Errorf("the bundle lacks %s: %v", want, names)
		}
	}
	t.Logf("console bundle: %d files, %d bytes uncompressed", len(files), total)
	if total > consoleBudget {
		t.Errorf("the console weighs %d bytes, over its budget of %d", total, consoleBudget)
	}
	external := regexp.MustCompile(`(?i)(\b(?:https?|wss?|ftp):|//)`) // a scheme, not "rows:"
	for _, name := range names {
		code := stripComments(name, string(files[name]))
		code = strings.ReplaceAll(code, svgNS, "")
		if loc := external.FindStringIndex(code); loc != nil {
			from := max(loc[0]-40, 0)
			t.Errorf("%s names another origin outside a comment: …%s…", name, code[from:min(loc[1]+40, len(code))])
		}
		switch path.Ext(name) {
		case ".html":
			if m := regexp.MustCompile(`(?i)<script(?:[^>]*)>`).FindAllString(code, -1); len(m) != 1 || !strings.Contains(m[0], "src=") {
				t.Errorf("%s: every script must be a file: %v", name, m)
			}
			if regexp.MustCompile(`(?i)\sstyle=|\son[a-z]+=|<style`).MatchString(code) {
				t.Errorf("%s has inline style or handlers", name)
			}
		case ".css":
			if strings.Contains(code, "@import") || strings.Contains(code, "url(") {
				t.Errorf("%s loads other files", name)
			}
		case ".js":
			for _, bad := range []string{"eval(", "new Function", "innerHTML", "localStorage.setItem(\"fieldrelay.token", "setAttribute(\"style\""} {
				if strings.Contains(code, bad) {
					t.Errorf("%s uses %s", name, bad)
				}
			}
		}
	}
	// The token is never stored in the browser: only the theme and the sound's choice go to
	// localStorage, and the mark "1" that a session cookie was kept
	// (docs/decisions/0273-quiet-logged-out-load.md).
	for _, name := range names {
		if strings.HasSuffix(name, ".js") && strings.Contains(stripComments(name, string(files[name])), "localStorage") && name != "js/app.js" && name != "/shared/api.js" {
			t.Errorf("%s uses localStorage", name)
		}
	}
	apiJS := stripComments("api.js", string(files["/shared/api.js"]))
	if strings.Count(apiJS, "localStorage.setItem(") != 1 || !strings.Contains(apiJS, `localStorage.setItem(HELD, "1")`) ||
		!strings.Contains(apiJS, `const HELD = "fieldrelay.session-held";`) {
		t.Error("/shared/api.js stores something else than the mark of a kept session")
	}
	app := string(files["js/app.js"])
	if strings.Count(app, "localStorage.setItem(") != 2 || !strings.Contains(app, `localStorage.setItem("fieldrelay.theme"`) ||
		!strings.Contains(app, `localStorage.setItem("fieldrelay.sound"`) {
		t.Error("js/app.js stores something else than the theme and the sound's choice")
	}
}

// stripComments removes the comments of a file by its kind: /* */ in CSS and JS, line
// comments (a line whose text starts with //) in JS, <!-- --> in HTML and SVG. JS code
// of the console keeps // out of its strings and regular expressions, so this is exact
// for it.
func stripComments(name, s string) string {
	block := func(s, open, close string) string {
		for {
			i := strings.Index(s, open)
			if i < 0 {
				return s
			}
			j := strings.Index(s[i+len(open):], close)
			if j < 0 {
				return s[:i]
			}
			s = s[:i] + s[i+len(open)+j+len(close):]
		}
	}
	switch path.Ext(name) {
	case ".css":
		return block(s, "/*", "*/")
	case ".js":
		var out []string
		for _, line := range strings.Split(block(s, "/*", "*/"), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "//") {
				out = append(out, line)
			}
		}
		return strings.Join(out, "\n")
	case ".html", ".svg":
		return block(s, "<!--", "-->")
	}
	return s
}
