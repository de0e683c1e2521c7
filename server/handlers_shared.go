package server

import (
	"embed"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// sharedFS holds what the console and the field app share: the stylesheet, the DOM
// helpers, the API client, the words for the node's codes and states. Both apps import
// them by one path, /shared/…, served once (docs/decisions/0145-what-web-apps-share.md).
//
//go:embed shared
var sharedFS embed.FS

// sharedFiles reads the embedded shared files once, and adds two tables written from
// the engine's, so that neither app holds a copy that could drift: roles.json, each
// role's permissions (and the roles, most privileged first), and moves.json, the mission
// states in lifecycle order and the moves a client may ask for from each.
var sharedFiles = sync.OnceValue(func() map[string]consoleFile {
	files := embeddedFiles(sharedFS, "shared")
	add := func(name string, v any) {
		body, err := json.Marshal(v)
		if err != nil {
			panic(err) // maps and slices of strings
		}
		files[name] = webFile(name, body)
	}
	roles := map[string][]string{}
	for _, r := range model.Roles {
		roles[r] = []string{}
		for _, p := range model.Permissions {
			if model.RoleHas(r, p) {
				roles[r] = append(roles[r], p)
			}
		}
	}
	add("roles.json", map[string]any{"roles": roles, "order": model.Roles})
	moves := map[string][]string{}
	for _, st := range model.MissionStates {
		moves[st] = append([]string{}, model.AllowedMissionMoves(st)...)
	}
	add("moves.json", map[string]any{"states": model.MissionStates, "moves": moves})
	return files
})

// handleShared serves a shared file of the web apps, as the apps' own (strict CSP, ETag,
// revalidated at each use). The folder is flat: /shared/:file.
func (s *Server) handleShared(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	name := ps.ByName("file")
	f, ok := sharedFiles()[name]
	if !ok {
		return model.Errorf(model.KindNotFound, "no such shared file: %s", model.Quote(name))
	}
	serveWebFile(w, r, f)
	return nil
}
