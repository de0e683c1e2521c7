package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"

	bolt "go.etcd.io/bbolt"
)

func TestCheck(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme")

	t.Run("clean", func(t *testing.T) {
		out := mustRun(t, a, "", "check", "--data", data)
		if !strings.Contains(out, "bbolt check: 0 error(s)") || !strings.HasSuffix(out, "OK\n") {
			t.Fatalf("check:\n%s", out)
		}
		var rep store.CheckReport
		if err := json.Unmarshal([]byte(mustRun(t, a, "", "check", "--data", data, "--json")), &rep); err != nil ||
			!rep.OK || rep.Counts.Tenants != 1 {
			t.Fatalf("check --json: %v %+v", err, rep)
		}
	})

	t.Run("refuses while held", func(t *testing.T) {
		db, err := store.Open(data, store.Options{}) // a server without a socket holds the directory
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		e := runJSONError(t, a, "", "check", "--data", data)
		if e.Error != string(model.KindUnavailable) || !strings.Contains(e.Message, "held by another process") {
			t.Fatalf("error: %+v", e)
		}
	})

	t.Run("no database", func(t *testing.T) {
		if e := runJSONError(t, a, "", "check", "--data", t.TempDir()); e.Field != "data" {
			t.Fatalf("error: %+v", e)
		}
	})

	t.Run("a problem: exit 1, the report once, nothing written", func(t *testing.T) {
		// An outbox_due key with no outbox entry behind it.
		b, err := bolt.Open(store.Path(data), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = b.Update(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("outbox_due")).Put(bytes.Repeat([]byte{1}, 40), nil)
		})
		if cerr := b.Close(); err != nil || cerr != nil {
			t.Fatal(err, cerr)
		}
		before, _ := os.ReadFile(store.Path(data))
		r := run(t, a, "", "check", "--data", data, "--json")
		var rep store.CheckReport
		if r.code != 1 || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep.OK || rep.ProblemCount != 1 ||
			!strings.Contains(rep.Problems[0], "outbox_due") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r = run(t, a, "", "check", "--data", data); r.code != 1 || !strings.Contains(r.stdout, "1 problem(s)") || r.stderr != "" {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if after, _ := os.ReadFile(store.Path(data)); !bytes.Equal(before, after) {
			t.Fatal("check changed the database")
		}
	})
}
