package model_test

import (
	"encoding/base64"
	"regexp"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/google/uuid"
)

func TestNewID(t *testing.T) {
	t.Run("UUIDv7", func(t *testing.T) {
		id := model.NewID()
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 || len(id) != 36 {
			t.Fatalf("NewID = %q (version %v, %v), want a canonical UUIDv7", id, u.Version(), err)
		}
	})
	t.Run("Ordered", func(t *testing.T) {
		prev := model.NewID()
		for i := 0; i < 1000; i++ {
			id := model.NewID()
			if id <= prev {
				t.Fatalf("NewID went backwards: %s after %s", id, prev)
			}
			prev = id
		}
	})
}

func TestValidID(t *testing.T) {
	for s, want := range map[string]bool{
		model.NewID():                           true,
		model.NilID:                             true,
		"":                                      false,
		"not-a-uuid":                            false,
		"{" + model.NilID + "}":                 false,
		"urn:uuid:" + model.NilID:               false,
		"0000000000000000000000000000000000000": false,
		"00000000-0000-0000-0000-00000000000g":  false,
	} {
		if got := model.ValidID(s); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestRandomToken(t *testing.T) {
	a, b := model.RandomToken(32), model.RandomToken(32)
	if a == b {
		t.Fatal("two tokens are equal")
	}
	raw, err := base64.RawURLEncoding.DecodeString(a)
	if err != nil || len(raw) != 32 {
		t.Fatalf("RandomToken(32) = %q: %d bytes, %v", a, len(raw), err)
	}
}

func TestHashToken(t *testing.T) {
	// SHA-256 of "abc".
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := model.HashToken("abc"); got != want {
		t.Fatalf("HashToken = %s, want %s", got, want)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(model.HashToken(engine.NewAPIKey())) {
		t.Fatal("HashToken is not 64 hex digits")
	}
}
