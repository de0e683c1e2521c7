package server

import (
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine"
)

type rateLimiter struct{}

func newRateLimiter(engine.Clock) *rateLimiter { return &rateLimiter{} }
func (s *Server) routes() http.Handler           { return http.NotFoundHandler() }
