package server

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// consoleFS holds the web console: plain HTML, CSS and JavaScript modules, no build step.
//
//go:embed console
var consoleFS embed.FS

// ConsoleCSP is the Content-Security-Policy of every console file: everything from the
// node itself, no inline script or style, no frames, no plugins.
const ConsoleCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; " +
	"frame-ancestors 'none'; form-action 'self'"

// consoleFile is one embedded file, ready to serve.
type consoleFile struct {
	body        []byte
	contentType string
	etag        string
}

// webFile makes a file ready to serve: its content type and ETag (SHA-256 of the content).
func webFile(name string, body []byte) consoleFile {
	sum := sha256.Sum256(body)
	ct := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) { // the system's MIME table may lack or differ on these
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".css":
		ct = "text/css; charset=utf-8"
	case ".html":
		ct = "text/html; charset=utf-8"
	case ".svg":
		ct = "image/svg+xml"
	case ".json":
		ct = "application/json"
	case ".webmanifest":
		ct = "application/manifest+json"
	case ".png":
		ct = "image/png"
	}
	return consoleFile{body: body, contentType: ct, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
}

// embeddedFiles reads the files of an embedded tree under dir, by their path below it.
func embeddedFiles(fsys embed.FS, dir string) map[string]consoleFile {
	files := map[string]consoleFile{}
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fsys.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, dir+"/")
		files[name] = webFile(name, body)
		return nil
	})
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	return files
}

// consoleFiles reads the embedded console once.
var consoleFiles = sync.OnceValue(func() map[string]consoleFile { return embeddedFiles(consoleFS, "console") })

// ConsoleBundle returns what the console loads (for tests and the size report): its own
// files by name, and the shared ones by their path, /shared/….
func ConsoleBundle() map[string][]byte {
	out := bodies(consoleFiles())
	for name, body := range bodies(sharedFiles()) {
		out["/shared/"+name] = body
	}
	return out
}

// bodies returns the bodies of embedded web files by name.
func bodies(files map[string]consoleFile) map[string][]byte {
	out := make(map[string][]byte, len(files))
	for name, f := range files {
		out[name] = f.body
	}
	return out
}

// handleRootRedirect sends a browser at the node's root to the console, with 302 Found:
// the root is not the console's permanent address, and a browser caches a 301 or 308
// for good (docs/decisions/0082-redirects.md).
func (s *Server) handleRootRedirect(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	redirect(w, r, http.StatusFound, "/console/")
	return nil
}

// handleConsoleRedirect adds the console's trailing slash, for good (301).
func (s *Server) handleConsoleRedirect(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	redirect(w, r, http.StatusMovedPermanently, "/console/")
	return nil
}

// redirected is the body of a redirect: JSON with request_id, like every answer.
type redirected struct {
	Location string `json:"location"`
}

// redirect answers a redirect to location (a path of the node), with the JSON body every
// answer has; clients follow Location and ignore it.
func redirect(w http.ResponseWriter, r *http.Request, status int, location string) {
	w.Header().Set("Location", location)
	_ = writeOne(w, r, status, redirected{Location: location})
}

// handleConsole serves the embedded console: /console/ is index.html. Every file carries
// the strict CSP, an ETag, and must be revalidated (a new binary serves new files).
func (s *Server) handleConsole(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	name := strings.TrimPrefix(ps.ByName("file"), "/")
	if name == "" {
		name = "index.html"
	}
	f, ok := consoleFiles()[name]
	if !ok {
		return model.Errorf(model.KindNotFound, "no such console file: %s", model.Quote(name))
	}
	serveWebFile(w, r, f)
	return nil
}

// serveWebFile answers an embedded file with the strict CSP, an ETag, and revalidation
// on every use.
func serveWebFile(w http.ResponseWriter, r *http.Request, f consoleFile) {
	h := w.Header()
	h.Set("Content-Security-Policy", ConsoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", f.contentType)
	h.Set("Content-Length", strconv.Itoa(len(f.body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.body)
}
