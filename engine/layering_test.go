package engine_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering holds the architecture of DESIGN.md: the domain imports no adapter and none
// of the adapters' libraries.
func TestLayering(t *testing.T) {
	const module = "github.com/fieldrelay/fieldrelay"
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to check the layering: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", module+"/engine").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != module+"/engine" {
		t.Fatalf("go list -deps gave an unexpected answer:\n%s", out)
	}
	forbidden := []string{"bbolt", "httprouter", "spf13/cobra", "golang-jwt"}
	adapters := []string{module + "/store", module + "/server", module + "/cli"}
	for _, dep := range deps {
		for _, f := range forbidden {
			if strings.Contains(dep, f) {
				t.Errorf("engine depends on %s", dep)
			}
		}
		for _, a := range adapters {
			if dep == a || strings.HasPrefix(dep, a+"/") {
				t.Errorf("engine depends on the adapter %s", dep)
			}
		}
	}
}
