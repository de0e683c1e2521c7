package engine_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fieldrelay/fieldrelay"

// deps lists the packages pkg depends on (go list -deps), pkg itself last.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to check the layering: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	ds := strings.Fields(string(out))
	if len(ds) == 0 || ds[len(ds)-1] != pkg {
		t.Fatalf("go list -deps %s gave an unexpected answer:\n%s", pkg, out)
	}
	return ds[:len(ds)-1]
}

// stdlib reports whether an import path is the standard library's (no dot in its first
// element).
func stdlib(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return !strings.Contains(first, ".")
}

// within reports whether p is pkg or one of its subpackages.
func within(p, pkg string) bool { return p == pkg || strings.HasPrefix(p, pkg+"/") }

// TestLayering holds the layers of docs/architecture.md: the shared types and ports
// (engine/model) below everything, depending on nothing but the standard library and uuid;
// the pure leaf packages on model at most; the use cases (engine) on model and the leaves,
// never on an adapter or an adapter's library; the stores on model alone. None of the
// domain layers (model, the leaves, engine) makes network calls of its own: net/http and
// net/smtp are the outbound adapters' (server/outbound), which use model and netguard only.
func TestLayering(t *testing.T) {
	model := module + "/engine/model"
	leaves := []string{module + "/engine/payload", module + "/engine/smscodec", module + "/engine/netguard",
		module + "/engine/strictjson", module + "/engine/password", module + "/engine/dircache"}
	adapters := []string{module + "/store", module + "/server", module + "/cli"}
	forbidden := []string{"bbolt", "httprouter", "spf13/cobra", "golang-jwt", "jackc/pgx"}

	t.Run("model", func(t *testing.T) {
		for _, d := range deps(t, model) {
			if !stdlib(d) && d != "github.com/google/uuid" {
				t.Errorf("engine/model depends on %s: it may use the standard library and uuid only", d)
			}
		}
	})
	t.Run("leaves", func(t *testing.T) {
		for _, leaf := range leaves {
			for _, d := range deps(t, leaf) {
				if within(d, module) && d != model {
					t.Errorf("%s depends on %s: a leaf may use engine/model only", leaf, d)
				}
			}
		}
	})
	t.Run("engine", func(t *testing.T) {
		for _, d := range deps(t, module+"/engine") {
			for _, f := range forbidden {
				if strings.Contains(d, f) {
					t.Errorf("engine depends on %s", d)
				}
			}
			for _, a := range adapters {
				if within(d, a) {
					t.Errorf("engine depends on the adapter %s", d)
				}
			}
		}
	})
	t.Run("network", func(t *testing.T) {
		for _, pkg := range append([]string{model, module + "/engine"}, leaves...) {
			for _, d := range deps(t, pkg) {
				if d == "net/http" || d == "net/smtp" {
					t.Errorf("%s depends on %s: outbound calls go through a port to server/outbound", pkg, d)
				}
			}
		}
	})
	t.Run("outbound", func(t *testing.T) {
		outbound := module + "/server/outbound"
		for _, d := range deps(t, outbound) {
			if within(d, module) && d != model && d != module+"/engine/netguard" {
				t.Errorf("server/outbound depends on %s: an outbound adapter may use engine/model and engine/netguard only", d)
			}
		}
	})
	t.Run("store", func(t *testing.T) {
		for _, d := range deps(t, module+"/store") {
			if within(d, module) && d != model {
				t.Errorf("store depends on %s: a store implements the ports of engine/model and uses nothing else of ours", d)
			}
		}
	})
	t.Run("store/postgres", func(t *testing.T) {
		for _, d := range deps(t, module+"/store/postgres") {
			switch {
			case within(d, module) && d != model:
				t.Errorf("store/postgres depends on %s: a store implements the ports of engine/model and uses nothing else of ours", d)
			case !within(d, module) && !stdlib(d) && !within(d, "github.com/jackc") && d != "github.com/google/uuid" &&
				!within(d, "golang.org/x/text") && !within(d, "golang.org/x/sync"):
				t.Errorf("store/postgres depends on %s: it may use engine/model and pgx (with pgx's own dependencies) only", d)
			}
		}
	})
}

// TestLayeringAdmin holds the place of the admin operations (engine/admin): above the use
// cases, which they call, and below the server and the command line, which both run them.
func TestLayeringAdmin(t *testing.T) {
	adapters := []string{module + "/store", module + "/server", module + "/cli"}
	for _, d := range deps(t, module+"/engine/admin") {
		for _, a := range adapters {
			if within(d, a) {
				t.Errorf("engine/admin depends on the adapter %s", d)
			}
		}
	}
}

// capabilities are the packages of engine that each hold one capability, in the order in
// which they may use each other: a capability may use the ones before it, never one after
// it, and never the engine (root) that builds them and calls them (docs/architecture.md).
var capabilities = []string{"stream", "usage", "tenants", "auth", "zones", "teams", "alerts", "sms", "devices", "upstream", "delivery", "retention"}

// TestLayeringCapabilities holds the capability packages apart: each depends on
// engine/model, the pure leaves, engine/writes (the pre-commit hooks of the engine's store,
// which uses model alone) and the capabilities before it; never on the engine (root), on
// engine/admin, on a capability after it or on an adapter; and none makes network calls
// of its own.
func TestLayeringCapabilities(t *testing.T) {
	model, writes := module+"/engine/model", module+"/engine/writes"
	leaves := []string{module + "/engine/payload", module + "/engine/smscodec", module + "/engine/netguard",
		module + "/engine/strictjson", module + "/engine/password", module + "/engine/dircache"}
	for _, d := range deps(t, writes) {
		if within(d, module) && d != model {
			t.Errorf("engine/writes depends on %s: it may use engine/model only", d)
		}
	}
	for i, c := range capabilities {
		pkg := module + "/engine/" + c
		allowed := append([]string{model, writes}, leaves...)
		for _, before := range capabilities[:i] {
			allowed = append(allowed, module+"/engine/"+before)
		}
		for _, d := range deps(t, pkg) {
			switch {
			case d == "net/http" || d == "net/smtp":
				t.Errorf("%s depends on %s: outbound calls go through a port to server/outbound", pkg, d)
			case within(d, module) && !slices.Contains(allowed, d):
				t.Errorf("%s depends on %s: a capability may use engine/model, engine/writes, the leaves and %v only",
					pkg, d, capabilities[:i])
			}
		}
	}
}
