package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/store"
)

// TestCompactCommand: `fieldrelay compact` is refused while the node serves; killed with
// SIGKILL at any point it leaves a database that is the original, byte for byte, or the
// verified copy, and clean for check; run to its end it gives space back and every
// acknowledged event is still there.
func TestCompactCommand(t *testing.T) {
	bin := binary(t)
	data := t.TempDir()
	n := serveDemo(t, bin, data)
	big := strings.Repeat("x", 16<<10)
	var acked []string
	for i := range 300 {
		status, _, body := n.call(t, "POST", "/v1/events", map[string]any{"type": "FIRE", "priority": "low",
			"vertical": "emergency", "idempotency_key": fmt.Sprintf("c-%d", i), "payload": map[string]any{"note": big}}, n.key()...)
		expect(t, "POST /v1/events", status, 201, body)
		acked = append(acked, body["event_id"].(string))
	}
	if _, out, err := runCLI(bin, "", "compact", "--data", data); err == nil || !bytes.Contains(out, []byte("is running")) {
		t.Fatalf("compact while serving: %v %s", err, out)
	}
	if err := n.stop(t); err != nil {
		t.Fatalf("serve exited with %v\n%s", err, n.logs)
	}
	sum := func() [32]byte {
		raw, err := os.ReadFile(store.Path(data))
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(raw)
	}
	check := func(what string) {
		t.Helper()
		out, stderr, err := runCLI(bin, "", "check", "--data", data, "--json")
		var report store.CheckReport
		if jerr := json.Unmarshal(out, &report); jerr != nil || err != nil || !report.OK {
			t.Fatalf("check %s: %v %v\n%s%s", what, err, jerr, out, stderr)
		}
	}
	original := sum()
	for i := range 12 {
		after := time.Duration(i) * 12 * time.Millisecond
		cmd := exec.Command(bin, "compact", "--data", data)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after) // when to kill: any point will do, the outcome is checked either way
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if now := sum(); now != original {
			t.Logf("the kill after %s came after the rename: the file is the compacted one", after)
			original = now
		}
		check(fmt.Sprintf("after a compact killed after %s", after))
	}
	before, _ := os.Stat(store.Path(data))
	out := mustRun(t, bin, "", "compact", "--data", data, "--json")
	var res store.CompactResult
	if err := json.Unmarshal(out, &res); err != nil || res.Records == 0 || res.After > res.Before {
		t.Fatalf("compact --json: %v %s", err, out)
	}
	if res.Before != before.Size() {
		t.Fatalf("compact reported %d bytes before, the file had %d", res.Before, before.Size())
	}
	if left, _ := filepath.Glob(store.Path(data) + ".*"); len(left) != 0 {
		t.Fatalf("files left beside the database: %v", left)
	}
	check("after compact")
	n = serveDemo(t, bin, data)
	have := map[string]bool{}
	for _, ev := range list(t, n.served, "/v1/events", n.key()) {
		have[ev["event_id"].(string)] = true
	}
	for _, id := range acked {
		if !have[id] {
			t.Fatalf("event %s is missing after compact", id)
		}
	}
}
