package engine_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
)

func TestError(t *testing.T) {
	t.Run("Message", func(t *testing.T) {
		err := engine.Errorf(engine.KindConflict, "slug %q is taken", "acme")
		if got, want := err.Error(), `conflict: slug "acme" is taken`; got != want {
			t.Fatalf("Error() = %q, want %q", got, want)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		err := engine.Invalid("name", "%s is required", "name")
		if err.Kind != engine.KindValidation || err.Field != "name" || err.Msg != "name is required" {
			t.Fatalf("Invalid = %+v", err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		err := engine.NotFound("zone")
		if err.Kind != engine.KindNotFound || err.Msg != "zone not found" {
			t.Fatalf("NotFound = %+v", err)
		}
	})
	t.Run("InternalHidesCause", func(t *testing.T) {
		err := engine.Internal(io.ErrUnexpectedEOF)
		if err.Kind != engine.KindInternal || strings.Contains(err.Msg, "EOF") {
			t.Fatalf("Internal = %+v: the client message must not carry the cause", err)
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatal("Internal does not unwrap to its cause")
		}
		if !strings.Contains(err.Error(), "unexpected EOF") {
			t.Fatalf("Error() = %q, want the cause for the log", err.Error())
		}
	})
	t.Run("KindThroughWrapping", func(t *testing.T) {
		err := fmt.Errorf("outer: %w", fmt.Errorf("middle: %w", engine.NotFound("team")))
		if got := engine.ErrorKind(err); got != engine.KindNotFound {
			t.Fatalf("ErrorKind = %s, want not_found", got)
		}
		if !engine.IsKind(err, engine.KindNotFound) || engine.IsKind(err, engine.KindConflict) {
			t.Fatal("IsKind disagrees with ErrorKind")
		}
	})
	t.Run("ForeignErrorIsInternal", func(t *testing.T) {
		if got := engine.ErrorKind(io.EOF); got != engine.KindInternal {
			t.Fatalf("ErrorKind(io.EOF) = %s, want internal_error", got)
		}
	})
	t.Run("NilIsNoKind", func(t *testing.T) {
		if engine.IsKind(nil, engine.KindInternal) {
			t.Fatal("IsKind(nil, internal_error) = true")
		}
	})
}
