package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/docs"
	"github.com/julienschmidt/httprouter"
)

// openapiRoutes lists the route of the API reference.
func (s *Server) openapiRoutes() []route {
	return []route{
		{method: "GET", path: "/v1/openapi.json", perm: public, h: s.handleOpenAPI},
	}
}

// handleOpenAPI answers docs/openapi.yaml as JSON, with request_id added at the top level
// as in every JSON answer.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	doc, err := docs.OpenAPIJSON()
	if err != nil {
		return err
	}
	writeBody(w, http.StatusOK, withRequestID(doc, requestID(r)))
	return nil
}
