package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/docs"
	"github.com/julienschmidt/httprouter"
)

// handleOpenAPI answers docs/openapi.yaml as JSON, as it is: an OpenAPI document has no
// request_id field, so the request id is only in the X-Request-Id
// header (docs/decisions/0072-served-api-reference.md).
func (s *Server) handleOpenAPI(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	doc, err := docs.OpenAPIJSON()
	if err != nil {
		return err
	}
	writeBody(w, http.StatusOK, doc)
	return nil
}
