package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Starting is the handler of a node whose store is not open yet (serve --database while
// the database does not answer; docs/decisions/0221-serve-before-database.md): /healthz
// answers 200, since the process runs, and every other request 503 unavailable with
// Retry-After and why, /readyz included.
func Starting(why func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := model.NewID()
		w.Header().Set("X-Request-Id", id)
		if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			writeJSON(w, r, http.StatusOK, struct {
				health
				RequestID string `json:"request_id"`
			}{health{Status: "ok"}, id})
			return
		}
		w.Header().Set("Retry-After", "2")
		writeJSON(w, r, http.StatusServiceUnavailable, errorBody{Error: model.KindUnavailable,
			Message: "the node is starting: " + why(), RequestID: id})
	})
}
