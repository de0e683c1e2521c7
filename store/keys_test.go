package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/google/uuid"
)

func TestIDKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		id := model.NewID()
		k, err := idKey(id)
		if err != nil {
			t.Fatal(err)
		}
		u := uuid.MustParse(id)
		if len(k) != 16 || !bytes.Equal(k, u[:]) {
			t.Fatalf("idKey = %x, want the 16 bytes of %s", k, id)
		}
		if got := idString(k); got != id {
			t.Fatalf("idString = %s, want %s", got, id)
		}
	})
	t.Run("TimeOrdered", func(t *testing.T) {
		a, _ := idKey(model.NewID())
		b, _ := idKey(model.NewID())
		if bytes.Compare(a, b) >= 0 {
			t.Fatal("a newer id does not sort after an older one")
		}
	})
	t.Run("ErrMalformed", func(t *testing.T) {
		for _, id := range []string{"", "nope", "0000"} {
			_, err := idKey(id)
			if !model.IsKind(err, model.KindNotFound) {
				t.Errorf("idKey(%q) = %v, want not_found", id, err)
			}
		}
	})
}

func TestPair(t *testing.T) {
	a, b := model.NewID(), model.NewID()
	k, err := pair(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(k) != 32 || idString(k[:16]) != a || idString(k[16:]) != b {
		t.Fatalf("pair = %x", k)
	}
	if _, err := pair("bad", b); err == nil {
		t.Fatal("pair accepted a malformed first id")
	}
	if _, err := pair(a, "bad"); err == nil {
		t.Fatal("pair accepted a malformed second id")
	}
}

func TestCursor(t *testing.T) {
	t.Run("RoundTrip", func(t *testing.T) {
		k, _ := idKey(model.NewID())
		c := encodeCursor(k)
		got, err := decodeCursor(c, 16)
		if err != nil || !bytes.Equal(got, k) {
			t.Fatalf("decodeCursor(encodeCursor(k)) = %x, %v; want %x", got, err, k)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		k, _ := idKey(model.NewID())
		good := encodeCursor(k)
		for _, c := range []string{"!!!", good + "=", good[:len(good)-2], good + "AAAA", "a b", encodeCursor(k[:8])} {
			_, err := decodeCursor(c, 16)
			var e *model.Error
			if !errors.As(err, &e) || e.Kind != model.KindValidation || e.Field != "cursor" {
				t.Fatalf("decodeCursor(%q) = %v, want a validation_error on cursor", c, err)
			}
		}
	})
}
