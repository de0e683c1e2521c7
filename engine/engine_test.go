package engine_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestEngine_Secret(t *testing.T) {
	ctx := context.Background()
	t.Run("GeneratedOnceAndKept", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		for _, name := range []string{engine.SecretJWT, engine.SecretInternal, engine.SecretNodeID} {
			a, err := e.Secret(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) < 32 {
				t.Fatalf("%s = %q: too short", name, a)
			}
			b, err := e.Secret(ctx, name)
			if err != nil || !bytes.Equal(a, b) {
				t.Fatalf("%s changed between calls: %q then %q (%v)", name, a, b, err)
			}
		}
		node, _ := e.Secret(ctx, engine.SecretNodeID)
		if !model.ValidID(string(node)) {
			t.Fatalf("node id = %q, want a UUID", node)
		}
		jwt, _ := e.Secret(ctx, engine.SecretJWT)
		internal, _ := e.Secret(ctx, engine.SecretInternal)
		if bytes.Equal(jwt, internal) {
			t.Fatal("two secrets are equal")
		}
	})
	t.Run("SurvivesReopen", func(t *testing.T) {
		dir := t.TempDir()
		db := mustOpenDir(t, dir)
		a, err := engine.New(db, engine.Options{Password: cheapPasswords}).Secret(ctx, engine.SecretJWT)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = mustOpenDir(t, dir)
		b, err := engine.New(db, engine.Options{Password: cheapPasswords}).Secret(ctx, engine.SecretJWT)
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("the JWT secret changed across a reopen (%v)", err)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		const n = 10
		got := make([][]byte, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				got[i], _ = e.Secret(ctx, engine.SecretInternal)
			}(i)
		}
		wg.Wait()
		for i := 1; i < n; i++ {
			if len(got[i]) == 0 || !bytes.Equal(got[i], got[0]) {
				t.Fatalf("concurrent first uses disagree: %q vs %q", got[i], got[0])
			}
		}
	})
	t.Run("Set", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		if err := e.SetSecret(ctx, engine.SecretInternal, []byte("chosen")); err != nil {
			t.Fatal(err)
		}
		v, err := e.Secret(ctx, engine.SecretInternal)
		if err != nil || string(v) != "chosen" {
			t.Fatalf("Secret after SetSecret = %q, %v", v, err)
		}
	})
}

func TestEngine_Defaults(t *testing.T) {
	e := engine.New(MustOpenDB(t), engine.Options{Password: cheapPasswords})
	if _, ok := e.Clock().(model.SystemClock); !ok {
		t.Fatalf("default clock = %T, want SystemClock", e.Clock())
	}
}
