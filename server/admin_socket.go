package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// AdminSocketName is the admin socket's file name inside a data directory.
const AdminSocketName = "admin.sock"

// adminHandler runs one admin operation by name. The command line and the admin socket
// share it, so an operation behaves the same whether or not a server holds the data.
type adminHandler func(ctx context.Context, op string, args json.RawMessage) (any, error)

// AdminRequest is what a client sends on an admin connection: one per connection.
type AdminRequest struct {
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// AdminResponse is the answer to an AdminRequest: a result or an error.
type AdminResponse struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *AdminError     `json:"error,omitempty"`
}

// AdminError is an error carried over the admin socket as the engine's kind and message.
type AdminError struct {
	Kind    model.Kind `json:"kind"`
	Field   string     `json:"field,omitempty"`
	Message string     `json:"message"`
}

// AdminErrorOf describes err for an administrator. The admin socket is reachable only by
// the data directory's owner, so an internal error keeps its cause, unlike an HTTP answer.
func AdminErrorOf(err error) *AdminError {
	var e *model.Error
	if !errors.As(err, &e) {
		return &AdminError{Kind: model.KindInternal, Message: err.Error()}
	}
	msg := e.Msg
	if e.Kind == model.KindInternal && e.Err != nil {
		msg = "internal error: " + e.Err.Error()
	}
	return &AdminError{Kind: e.Kind, Field: e.Field, Message: msg}
}

// Err returns the engine error that the AdminError describes.
func (a *AdminError) Err() *model.Error {
	return &model.Error{Kind: a.Kind, Field: a.Field, Msg: a.Message}
}

// ErrAdminUnavailable is returned by CallAdmin when nothing answers on the socket.
var ErrAdminUnavailable = errors.New("the admin socket does not answer")

// Limits of one admin exchange.
const (
	adminRequestTimeout = 10 * time.Second
	adminMaxRequest     = 1 << 20
)

// ListenAdmin listens on the unix socket at path with mode 0600, replacing a stale socket
// file left by a process that died. The caller must already hold the data directory (its
// store lock), which proves that no live server owns the socket. Closing the listener
// removes the socket file.
func ListenAdmin(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale admin socket: %w", err)
		}
	}
	// Bind under a temporary name and rename once the mode is 0600, so that the socket is
	// never reachable with looser permissions.
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.%d", filepath.Base(path), os.Getpid()))
	_ = os.Remove(tmp)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listening on the admin socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		_ = ln.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("securing the admin socket: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = ln.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("placing the admin socket: %w", err)
	}
	return &adminListener{UnixListener: ln, path: path}, nil
}

type adminListener struct {
	*net.UnixListener
	path string
	once sync.Once
}

func (l *adminListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() { _ = os.Remove(l.path) })
	return err
}

// ServeAdmin answers admin requests on ln with the operations of engine/admin over eng
// until ctx is done, then closes ln and waits for the operations under way. Each
// connection carries one JSON AdminRequest and gets one JSON AdminResponse. It logs each
// operation's name and outcome, never its arguments (they may hold a password).
func ServeAdmin(ctx context.Context, ln net.Listener, eng *engine.Engine, log *slog.Logger) error {
	return serveAdmin(ctx, ln, func(ctx context.Context, op string, args json.RawMessage) (any, error) {
		res, err := admin.Run(ctx, eng, op, args)
		if err != nil {
			log.Warn("admin operation failed", "op", op, "error", string(model.ErrorKind(err)))
		} else {
			log.Info("admin operation", "op", op)
		}
		return res, err
	})
}

// serveAdmin is ServeAdmin with the operations of handle.
func serveAdmin(ctx context.Context, ln net.Listener, handle adminHandler) error {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	// Closing again waits for a close under way, so that the socket file is gone on return.
	defer ln.Close()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("admin socket: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// An operation under way finishes even when shutdown begins.
			serveAdminConn(context.WithoutCancel(ctx), conn, handle)
		}()
	}
}

func serveAdminConn(ctx context.Context, conn net.Conn, handle adminHandler) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(adminRequestTimeout))
	var req AdminRequest
	var resp AdminResponse
	dec := json.NewDecoder(io.LimitReader(conn, adminMaxRequest))
	if err := dec.Decode(&req); err != nil {
		resp.Error = &AdminError{Kind: model.KindInvalidJSON, Message: "the admin request is not valid JSON"}
	} else {
		_ = conn.SetReadDeadline(time.Time{})
		result, err := runadminHandler(ctx, handle, req)
		if err == nil {
			resp.Result, err = json.Marshal(result)
		}
		if err != nil {
			resp.Result, resp.Error = nil, AdminErrorOf(err)
		}
	}
	_ = conn.SetWriteDeadline(time.Now().Add(adminRequestTimeout))
	_ = json.NewEncoder(conn).Encode(&resp)
}

// runadminHandler runs handle, turning a panic into an internal error.
func runadminHandler(ctx context.Context, handle adminHandler, req AdminRequest) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, model.Internal(fmt.Errorf("admin operation %q panicked: %v", req.Op, r))
		}
	}()
	return handle(ctx, req.Op, req.Args)
}

// CallAdmin sends one operation to the admin socket at path and decodes its result into
// out (when out is not nil). It returns an error wrapping ErrAdminUnavailable when no
// process answers on the socket, and the operation's *engine.Error when it failed.
func CallAdmin(ctx context.Context, path, op string, args, out any) error {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	conn, err := d.DialContext(dctx, "unix", path)
	cancel()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrAdminUnavailable, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	req := AdminRequest{Op: op}
	if args != nil {
		if req.Args, err = json.Marshal(args); err != nil {
			return err
		}
	}
	if err := json.NewEncoder(conn).Encode(&req); err != nil {
		return fmt.Errorf("sending to the admin socket: %w", err)
	}
	var resp AdminResponse
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		return fmt.Errorf("reading the admin socket's answer: %w", err)
	}
	if resp.Error != nil {
		return resp.Error.Err()
	}
	if out != nil && resp.Result != nil {
		if err := json.Unmarshal(resp.Result, out); err != nil {
			return fmt.Errorf("decoding the admin socket's answer: %w", err)
		}
	}
	return nil
}
