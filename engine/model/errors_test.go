package model_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestError(t *testing.T) {
	t.Run("Message", func(t *testing.T) {
		err := model.Errorf(model.KindConflict, "slug %q is taken", "acme")
		if got, want := err.Error(), `conflict: slug "acme" is taken`; got != want {
			t.Fatalf("Error() = %q, want %q", got, want)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		err := model.Invalid("name", "%s is required", "name")
		if err.Kind != model.KindValidation || err.Field != "name" || err.Msg != "name is required" {
			t.Fatalf("Invalid = %+v", err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		err := model.NotFound("zone")
		if err.Kind != model.KindNotFound || err.Msg != "zone not found" {
			t.Fatalf("NotFound = %+v", err)
		}
	})
	t.Run("InternalHidesCause", func(t *testing.T) {
		err := model.Internal(io.ErrUnexpectedEOF)
		if err.Kind != model.KindInternal || strings.Contains(err.Msg, "EOF") {
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
		err := fmt.Errorf("outer: %w", fmt.Errorf("middle: %w", model.NotFound("team")))
		if got := model.ErrorKind(err); got != model.KindNotFound {
			t.Fatalf("ErrorKind = %s, want not_found", got)
		}
		if !model.IsKind(err, model.KindNotFound) || model.IsKind(err, model.KindConflict) {
			t.Fatal("IsKind disagrees with ErrorKind")
		}
	})
	t.Run("ForeignErrorIsInternal", func(t *testing.T) {
		if got := model.ErrorKind(io.EOF); got != model.KindInternal {
			t.Fatalf("ErrorKind(io.EOF) = %s, want internal_error", got)
		}
	})
	t.Run("NilIsNoKind", func(t *testing.T) {
		if model.IsKind(nil, model.KindInternal) {
			t.Fatal("IsKind(nil, internal_error) = true")
		}
	})
}

func TestQuote(t *testing.T) {
	long := strings.Repeat("é", model.MaxQuoted) + "tail"
	for name, c := range map[string]struct{ in, want string }{
		"Short":      {"gov", `"gov"`},
		"Empty":      {"", `""`},
		"Escaped":    {"a\"b\x00", `"a\"b\x00"`},
		"AtTheLimit": {strings.Repeat("x", model.MaxQuoted), `"` + strings.Repeat("x", model.MaxQuoted) + `"`},
		"Cut":        {strings.Repeat("x", 500<<10), `"` + strings.Repeat("x", model.MaxQuoted) + `"…`},
		"CutRunes":   {long, `"` + strings.Repeat("é", model.MaxQuoted) + `"…`},
		"InvalidUTF": {strings.Repeat("\xff", model.MaxQuoted+1), `"` + strings.Repeat(`\xff`, model.MaxQuoted) + `"…`},
	} {
		t.Run(name, func(t *testing.T) {
			if got := model.Quote(c.in); got != c.want {
				t.Fatalf("Quote = %s, want %s", got, c.want)
			}
		})
	}
}

// TestMessagesQuoteThroughQuote holds the rule of engine.Quote: no error constructor of
// engine, server, cli or store formats a value with %q itself (it would echo the value whole).
func TestMessagesQuoteThroughQuote(t *testing.T) {
	constructors := map[string]bool{"Invalid": true, "Errorf": true, "refused": true}
	fset := token.NewFileSet()
	for _, dir := range []string{".", "../server", "../cli", "../store"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var name string
				switch fn := call.Fun.(type) {
				case *ast.Ident:
					name = fn.Name
				case *ast.SelectorExpr:
					if x, ok := fn.X.(*ast.Ident); ok && x.Name == "engine" {
						name = fn.Sel.Name
					}
				}
				if !constructors[name] {
					return true
				}
				ast.Inspect(call, func(n ast.Node) bool {
					if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.Contains(lit.Value, "%q") {
						t.Errorf("%s: %s formats with %%q: quote the value with Quote", fset.Position(lit.Pos()), name)
					}
					return true
				})
				return false
			})
		}
	}
}
