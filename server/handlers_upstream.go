package server

import (
	"context"
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// upstreamBody is the body of PUT /v1/tenant/upstream: the input and
// the write's optional body key, in one decode.
type upstreamBody struct {
	model.UpstreamInput
	bodyKey
}

// handlePutUpstream sets the upstream of the caller's tenant (PUT /v1/tenant/upstream).
// The answer, and what an Idempotency-Key stores, hold the key's prefix only.
func (s *Server) handlePutUpstream(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[upstreamBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.SetUpstream(r.Context(), principal(r), in.UpstreamInput, wr)
		return err
	})
}

func (s *Server) handleGetUpstream(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	u, err := s.eng.Upstream(r.Context(), principal(r))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, u)
}

func (s *Server) handleUpstreamStatus(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	st, err := s.eng.UpstreamStatus(r.Context(), principal(r))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, st)
}

// handleDownstream answers a site node's pull of the downstream log (POST
// /v1/devices/downstream); its users carry their password hashes: a secret answer. A pull
// that waits for news is answered at once when the server shuts down.
func (s *Server) handleDownstream(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	_, in, err := decodeBody[model.DownPullInput](r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	ans, err := s.eng.PullDownstream(ctx, principal(r), in)
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, ans)
}
