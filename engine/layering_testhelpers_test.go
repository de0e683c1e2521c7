package engine_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLayering_TestHelpers holds that the shared test helpers (docs/architecture.md) are
// imported by tests only: no package's non-test code imports them, but each other.
func TestLayering_TestHelpers(t *testing.T) {
	helpers := []string{module + "/engine/model/modeltest", module + "/store/storetest",
		module + "/server/servertest"}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to check the layering: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}",
		module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s/...: %v\n%s", module, err, out)
	}
	var seen int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		seen++
		if slices.Contains(helpers, f[0]) {
			continue
		}
		for _, imp := range f[1:] {
			if slices.Contains(helpers, imp) {
				t.Errorf("%s imports the test helper %s outside its tests", f[0], imp)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list %s/... listed %d packages:\n%s", module, seen, out)
	}
}
