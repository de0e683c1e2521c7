// Package server is the HTTP adapter of fieldrelay: routes, middleware, one handler per
// operation, the mapping of engine errors to statuses, TLS and the admin socket.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// Config configures a Server.
type Config struct {
	// InternalSecret guards /metrics.
	InternalSecret string
	// SMSGateway is the node's SMS gateway (nil: none); its driver's webhook route takes
	// the gateway's inbound SMS, checked with its credentials.
	SMSGateway *outbound.SMSGateway
	// Logger receives the access log; slog.Default when nil.
	Logger *slog.Logger
	// StreamHeartbeat is the interval of GET /v1/stream's heartbeat (15 s when zero).
	StreamHeartbeat time.Duration
	// Timeouts of HTTPServer's connections; zero takes the production default
	// (DefaultTimeouts). Tests of slow clients set short ones.
	Timeouts Timeouts
	// Conns caps the connections Serve holds open; zero fields are no cap (the command
	// line sets them: docs/decisions/0141-connection-caps.md).
	Conns ConnLimits
}

// Timeouts bound how long a client may hold a connection (net/http's fields of the same
// names): a client that dribbles its headers is cut at ReadHeaderTimeout, one that dribbles
// its body at ReadTimeout (counted from the start of the request).
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// DefaultTimeouts are the node's connection timeouts.
var DefaultTimeouts = Timeouts{ReadHeader: 5 * time.Second, Read: 60 * time.Second,
	Write: 60 * time.Second, Idle: 120 * time.Second}

// orDefault fills the zero fields of t from DefaultTimeouts.
func (t Timeouts) orDefault() Timeouts {
	pick := func(v, d time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return d
	}
	d := DefaultTimeouts
	return Timeouts{ReadHeader: pick(t.ReadHeader, d.ReadHeader), Read: pick(t.Read, d.Read),
		Write: pick(t.Write, d.Write), Idle: pick(t.Idle, d.Idle)}
}

// Server serves the HTTP API of one node.
type Server struct {
	eng       *engine.Engine
	cfg       Config
	log       *slog.Logger
	jwtSecret []byte
	fpSecret  []byte
	// smsSecret is the root of the tenants' Android webhook signing keys (engine.SMSWebhookKey).
	smsSecret []byte
	limiter   *rateLimiter
	conns     *connLimiter
	metrics   *metrics
	handler   http.Handler
	// closing is closed when the HTTP server shuts down: streams end then.
	closing   chan struct{}
	closeOnce sync.Once
}

// New returns a Server over eng. It loads (or creates) the installation's JWT secret.
func New(ctx context.Context, eng *engine.Engine, cfg Config) (*Server, error) {
	s := &Server{eng: eng, cfg: cfg, log: cfg.Logger, closing: make(chan struct{})}
	if s.cfg.StreamHeartbeat <= 0 {
		s.cfg.StreamHeartbeat = 15 * time.Second
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	var err error
	if s.jwtSecret, err = eng.Secret(ctx, engine.SecretJWT); err != nil {
		return nil, err
	}
	s.fpSecret = s.jwtSecret
	if s.smsSecret, err = eng.Secret(ctx, engine.SecretSMSWebhook); err != nil {
		return nil, err
	}
	s.limiter = newRateLimiter(eng.Clock(), eng.RateWindows(), s.log)
	s.conns = newConnLimiter(cfg.Conns)
	s.metrics = newMetrics(eng)
	s.metrics.reg.MustRegister(connCollector{s.conns})
	s.handler = s.routes()
	return s, nil
}

// Handler returns the HTTP handler of the API.
func (s *Server) Handler() http.Handler { return s.handler }

// maxHeaderBytes bounds a request's headers (net/http adds 4 KiB of slack): over it, 431
// headers_too_large.
const maxHeaderBytes = 64 << 10

// HTTPServer returns an http.Server for addr with the node's timeouts: a slow client
// cannot hold a connection by trickling its headers or body. A stream sets its own
// deadlines, and ends when the server shuts down. Serve it with Serve.
func (s *Server) HTTPServer(addr string) *http.Server {
	to := s.cfg.Timeouts.orDefault()
	hs := &http.Server{
		Addr:              addr,
		Handler:           s.handler,
		ReadHeaderTimeout: to.ReadHeader,
		ReadTimeout:       to.Read,
		WriteTimeout:      to.Write,
		IdleTimeout:       to.Idle,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	hs.RegisterOnShutdown(s.CloseStreams)
	return hs
}

// CloseStreams ends every GET /v1/stream in progress (at shutdown: they never end
// otherwise); new ones end at once.
func (s *Server) CloseStreams() { s.closeOnce.Do(func() { close(s.closing) }) }
