package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// counter is a write that counts its runs and leaves a trace in the transaction.
type counter struct {
	runs atomic.Int64
}

func (c *counter) fn(status int, body string) func(model.Tx) (model.Reply, error) {
	return func(tx model.Tx) (model.Reply, error) {
		n := c.runs.Add(1)
		if err := tx.PutMeta("trace_"+body, []byte{byte(n)}); err != nil {
			return model.Reply{}, err
		}
		return model.Reply{Status: status, Body: []byte(body), RequestID: "req-" + body}, nil
	}
}

func meta(t *testing.T, e *engine.Engine, key string) []byte {
	t.Helper()
	var v []byte
	err := e.View(context.Background(), func(tx model.Tx) (err error) {
		v, err = tx.Meta(key)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestEngine_Write(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*engine.Engine, string) {
		e, _ := MustOpenEngine(t)
		return e, MustCreateTenant(t, e, "acme").Tenant.ID
	}
	key := func(k, fp string) *model.IdempotencyKey {
		return &model.IdempotencyKey{Route: "POST /v1/zones", Key: k, Fingerprint: fp}
	}
	t.Run("OK", func(t *testing.T) {
		e, tid := setup(t)
		var c counter
		r, err := e.Write(ctx, tid, key("k1", "fp1"), c.fn(201, `{"id":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != 201 || string(r.Body) != `{"id":1}` || r.RequestID != `req-{"id":1}` || r.Replayed {
			t.Fatalf("first reply = %+v", r)
		}
		if meta(t, e, `trace_{"id":1}`) == nil {
			t.Fatal("the write's effect was not committed")
		}
	})
	t.Run("Replay", func(t *testing.T) {
		e, tid := setup(t)
		var c counter
		first, err := e.Write(ctx, tid, key("k1", "fp1"), c.fn(201, "first"))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			r, err := e.Write(ctx, tid, key("k1", "fp1"), c.fn(201, "second"))
			if err != nil {
				t.Fatal(err)
			}
			if !r.Replayed || r.Status != first.Status || string(r.Body) != "first" || r.RequestID != first.RequestID {
				t.Fatalf("replay = %+v, want the first reply %+v replayed", r, first)
			}
		}
		if n := c.runs.Load(); n != 1 {
			t.Fatalf("fn ran %d times, want once", n)
		}
		if meta(t, e, "trace_second") != nil {
			t.Fatal("a replay ran the write again")
		}
	})
	t.Run("ErrIdempotencyReused", func(t *testing.T) {
		e, tid := setup(t)
		var c counter
		if _, err := e.Write(ctx, tid, key("k1", "fp1"), c.fn(201, "first")); err != nil {
			t.Fatal(err)
		}
		_, err := e.Write(ctx, tid, key("k1", "fp2"), c.fn(201, "second"))
		AssertKind(t, err, model.KindIdempotencyReused)
		if n := c.runs.Load(); n != 1 {
			t.Fatalf("fn ran %d times, want once", n)
		}
		// The original stays replayable.
		r, err := e.Write(ctx, tid, key("k1", "fp1"), c.fn(201, "third"))
		if err != nil || !r.Replayed || string(r.Body) != "first" {
			t.Fatalf("replay after a reuse = %+v, %v", r, err)
		}
	})
	t.Run("ErrFnStoresNothing", func(t *testing.T) {
		e, tid := setup(t)
		var c counter
		boom := model.Invalid("name", "name is required")
		_, err := e.Write(ctx, tid, key("k1", "fp1"), func(tx model.Tx) (model.Reply, error) {
			c.runs.Add(1)
			if err := tx.PutMeta("trace_failed", []byte("x")); err != nil {
				return model.Reply{}, err
			}
			return model.Reply{}, boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Write = %v, want fn's error as it is", err)
		}
		if meta(t, e, "trace_failed") != nil {
			t.Fatal("a failed write's effect was committed")
		}
		// The retry runs fn, this time successfully, and the next one replays it.
		r, err := e.Write(ctx, tid, key("k1", "fp1"), c.fn(201, "retry"))
		if err != nil || r.Replayed || string(r.Body) != "retry" {
			t.Fatalf("retry = %+v, %v; want a fresh run", r, err)
		}
		r, err = e.Write(ctx, tid, key("k1", "fp1"), c.fn(201, "again"))
		if err != nil || !r.Replayed || string(r.Body) != "retry" {
			t.Fatalf("replay = %+v, %v", r, err)
		}
		if n := c.runs.Load(); n != 2 {
			t.Fatalf("fn ran %d times, want 2", n)
		}
	})
	t.Run("FailedRetryWithOtherBody", func(t *testing.T) {
		// A key whose first request failed is free: another body may use it.
		e, tid := setup(t)
		var c counter
		_, err := e.Write(ctx, tid, key("k1", "fp1"), func(model.Tx) (model.Reply, error) {
			return model.Reply{}, model.Invalid("code", "code is required")
		})
		AssertInvalid(t, err, "code")
		if _, err := e.Write(ctx, tid, key("k1", "fp2"), c.fn(201, "ok")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrKeyTooLong", func(t *testing.T) {
		e, tid := setup(t)
		var c counter
		_, err := e.Write(ctx, tid, key(strings.Repeat("k", 256), "fp"), c.fn(201, "x"))
		AssertInvalid(t, err, "idempotency_key")
		if c.runs.Load() != 0 {
			t.Fatal("fn ran for a refused key")
		}
		if _, err := e.Write(ctx, tid, key(strings.Repeat("k", 255), "fp"), c.fn(201, "x")); err != nil {
			t.Fatalf("a 255-character key: %v", err)
		}
	})
	t.Run("NoKey", func(t *testing.T) {
		e, tid := setup(t)
		var c counter
		for _, k := range []*model.IdempotencyKey{nil, key("", "fp"), nil} {
			r, err := e.Write(ctx, tid, k, c.fn(200, "x"))
			if err != nil || r.Replayed {
				t.Fatalf("Write without a key = %+v, %v", r, err)
			}
		}
		if n := c.runs.Load(); n != 3 {
			t.Fatalf("fn ran %d times, want 3", n)
		}
	})
	t.Run("ScopedToRoute", func(t *testing.T) {
		e, tid := setup(t)
		var c counter
		a := &model.IdempotencyKey{Route: "POST /v1/zones", Key: "k", Fingerprint: "fp"}
		b := &model.IdempotencyKey{Route: "POST /v1/teams", Key: "k", Fingerprint: "other"}
		if _, err := e.Write(ctx, tid, a, c.fn(201, "a")); err != nil {
			t.Fatal(err)
		}
		r, err := e.Write(ctx, tid, b, c.fn(201, "b"))
		if err != nil || r.Replayed || string(r.Body) != "b" {
			t.Fatalf("same key on another route = %+v, %v", r, err)
		}
	})
	t.Run("ScopedToTenant", func(t *testing.T) {
		e, tid := setup(t)
		other := MustCreateTenant(t, e, "other").Tenant.ID
		var c counter
		if _, err := e.Write(ctx, tid, key("k", "fp"), c.fn(201, "a")); err != nil {
			t.Fatal(err)
		}
		r, err := e.Write(ctx, other, key("k", "fp"), c.fn(201, "b"))
		if err != nil || r.Replayed || string(r.Body) != "b" {
			t.Fatalf("same key in another tenant = %+v, %v", r, err)
		}
	})
	t.Run("ErrUnknownTenant", func(t *testing.T) {
		e, _ := setup(t)
		var c counter
		_, err := e.Write(ctx, model.NewID(), key("k", "fp"), c.fn(201, "x"))
		AssertKind(t, err, model.KindNotFound)
	})
	t.Run("ConcurrentDuplicates", func(t *testing.T) {
		e, tid := setup(t)
		var c counter
		const n = 20
		replies := make([]model.Reply, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				replies[i], errs[i] = e.Write(ctx, tid, key("same", "fp"), c.fn(201, "once"))
			}(i)
		}
		close(start)
		wg.Wait()
		fresh := 0
		for i := range replies {
			if errs[i] != nil {
				t.Fatalf("goroutine %d: %v", i, errs[i])
			}
			if string(replies[i].Body) != "once" || replies[i].Status != 201 {
				t.Fatalf("goroutine %d got %+v", i, replies[i])
			}
			if !replies[i].Replayed {
				fresh++
			}
		}
		if runs := c.runs.Load(); runs != 1 || fresh != 1 {
			t.Fatalf("fn ran %d times and %d replies were fresh; want exactly one each", runs, fresh)
		}
	})
}

func TestValidateIdempotencyKey(t *testing.T) {
	if err := engine.ValidateIdempotencyKey("idempotency_key", strings.Repeat("x", 255)); err != nil {
		t.Fatal(err)
	}
	AssertInvalid(t, engine.ValidateIdempotencyKey("Idempotency-Key", strings.Repeat("x", 256)), "Idempotency-Key")
}

func TestFingerprint(t *testing.T) {
	a := engine.Fingerprint([]byte("secret"), []byte(`{"a":1}`))
	if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("Fingerprint = %q, want 32 hex digits", a)
	}
	if a != engine.Fingerprint([]byte("secret"), []byte(`{"a":1}`)) {
		t.Fatal("Fingerprint is not deterministic")
	}
	if a == engine.Fingerprint([]byte("secret"), []byte(`{"a":2}`)) {
		t.Fatal("two bodies share a fingerprint")
	}
	if a == engine.Fingerprint([]byte("other secret"), []byte(`{"a":1}`)) {
		t.Fatal("the fingerprint does not depend on the secret")
	}
}

func TestEngine_SweepIdempotency(t *testing.T) {
	ctx := context.Background()
	e, clock := MustOpenEngine(t)
	tid := MustCreateTenant(t, e, "acme").Tenant.ID
	key := func(k string) *model.IdempotencyKey {
		return &model.IdempotencyKey{Route: "POST /v1/zones", Key: k, Fingerprint: "fp"}
	}
	var c counter
	if _, err := e.Write(ctx, tid, key("old"), c.fn(201, "old")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(engine.IdempotencyRetention - time.Minute)
	if _, err := e.Write(ctx, tid, key("young"), c.fn(201, "young")); err != nil {
		t.Fatal(err)
	}
	// Just before 24 h nothing goes; just after, only the old key does.
	if n, err := e.SweepIdempotency(ctx); err != nil || n != 0 {
		t.Fatalf("early sweep deleted %d (%v)", n, err)
	}
	clock.Advance(2 * time.Minute)
	if n, err := e.SweepIdempotency(ctx); err != nil || n != 1 {
		t.Fatalf("sweep deleted %d (%v), want 1", n, err)
	}
	if r, _ := e.Write(ctx, tid, key("young"), c.fn(201, "again")); !r.Replayed {
		t.Fatal("the young key was swept")
	}
	if r, _ := e.Write(ctx, tid, key("old"), c.fn(201, "again")); r.Replayed {
		t.Fatal("the old key was kept")
	}
}

func TestCanonicalJSON(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{`{"a":1,"b":[1,2,{"d":null,"c":"x"}]}`, "{ \"b\" : [1, 2, {\"c\":\"x\", \"d\":null}],\n \"a\":1 }"},
		{`"\u00e9"`, `"é"`},
	} {
		if x, y := engine.CanonicalJSON([]byte(c.a)), engine.CanonicalJSON([]byte(c.b)); string(x) != string(y) {
			t.Errorf("%s and %s: %s != %s", c.a, c.b, x, y)
		}
	}
	for _, c := range []struct{ a, b string }{
		{`{"a":1}`, `{"a":1.0}`}, // numbers as written: a decoder may tell them apart
		{`{"a":1}`, `{"a":2}`},
		{`[1,2]`, `[2,1]`},
	} {
		if x, y := engine.CanonicalJSON([]byte(c.a)), engine.CanonicalJSON([]byte(c.b)); string(x) == string(y) {
			t.Errorf("%s and %s have one form: %s", c.a, c.b, x)
		}
	}
	for _, raw := range []string{"", "not json", `{"a":1} trailing`, `{"a":`} {
		if got := engine.CanonicalJSON([]byte(raw)); string(got) != raw {
			t.Errorf("%q: %q, want it as it is", raw, got)
		}
	}
}
