package server

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// fieldFS holds the field app: an installable web app for field operators, plain HTML,
// CSS and JavaScript modules like the console, some of whose modules it imports.
//
//go:embed field
var fieldFS embed.FS

// fieldVersionMark is the placeholder in sw.js that the app's version replaces.
const fieldVersionMark = "__FIELD_VERSION__"

// fieldBuild is mixed into the field app's version: a release may stamp it (go build
// -ldflags "-X github.com/fieldrelay/fieldrelay/server.fieldBuild=…") so that every build's
// app replaces the one before, even when no app file changed.
var fieldBuild string

// fieldShared are the console's files the field app uses: its service worker caches
// them with its own (docs/decisions/0127-field-app.md).
var fieldShared = []string{"app.css", "js/dom.js"}

// fieldFiles reads the embedded field app once, adds its icons, and writes the app's
// version into its service worker: a hash of every file it caches, the console's shared
// ones included, so that a binary with any other app file installs a new worker.
var fieldFiles = sync.OnceValue(func() map[string]consoleFile {
	files := embeddedFiles(fieldFS, "field")
	files["icon-192.png"] = webFile("icon-192.png", fieldIcon(192))
	files["icon-512.png"] = webFile("icon-512.png", fieldIcon(512))
	h := sha256.New()
	h.Write([]byte(fieldBuild))
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		h.Write([]byte(name))
		h.Write(files[name].body)
	}
	for _, name := range fieldShared {
		h.Write([]byte("/console/" + name))
		h.Write(consoleFiles()[name].body)
	}
	version := base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:9])
	sw := files["sw.js"]
	files["sw.js"] = webFile("sw.js", bytes.ReplaceAll(sw.body, []byte(fieldVersionMark), []byte(version)))
	return files
})

// FieldBundle returns the embedded field app's files by name (for tests and the size
// report).
func FieldBundle() map[string][]byte { return bodies(fieldFiles()) }

// handleFieldRedirect adds the field app's trailing slash, for good (301).
func (s *Server) handleFieldRedirect(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	redirect(w, r, http.StatusMovedPermanently, "/field/")
	return nil
}

// handleField serves the field app: /field/ is index.html; every file as the console's
// (strict CSP, ETag, revalidated at each use), which lets the service worker see a new
// version at once.
func (s *Server) handleField(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	name := strings.TrimPrefix(ps.ByName("file"), "/")
	if name == "" {
		name = "index.html"
	}
	f, ok := fieldFiles()[name]
	if !ok {
		return model.Errorf(model.KindNotFound, "no such field app file: %s", model.Quote(name))
	}
	serveWebFile(w, r, f)
	return nil
}
