package password_test

import (
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/password"
)

// testPassword is a valid password.
const testPassword = "correct horse battery"

// cheap keeps argon2id fast in tests.
var cheap = password.Params{Time: 1, Memory: 64, Threads: 1}

func TestPasswordParams_Hash(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		h := cheap.Hash(testPassword)
		if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
			t.Fatalf("Hash = %q, want a PHC argon2id string with its costs", h)
		}
		if !password.VerifyPassword(h, testPassword) {
			t.Fatal("VerifyPassword rejects the right password")
		}
	})
	t.Run("ErrWrongPassword", func(t *testing.T) {
		h := cheap.Hash(testPassword)
		for _, pw := range []string{"", "correct horse battery ", "Correct horse battery", "x"} {
			if password.VerifyPassword(h, pw) {
				t.Errorf("VerifyPassword accepted %q", pw)
			}
		}
	})
	t.Run("Salted", func(t *testing.T) {
		a, b := cheap.Hash(testPassword), cheap.Hash(testPassword)
		if a == b {
			t.Fatal("two hashes of one password are equal: no salt")
		}
	})
	t.Run("CostsReadFromHash", func(t *testing.T) {
		// A hash made with other costs still verifies: the costs travel in the hash.
		other := password.Params{Time: 2, Memory: 128, Threads: 2}
		h := other.Hash(testPassword)
		if !strings.Contains(h, "$m=128,t=2,p=2$") || !password.VerifyPassword(h, testPassword) {
			t.Fatalf("hash %q with other costs does not verify", h)
		}
	})
	t.Run("Unicode", func(t *testing.T) {
		pw := "pässwörd-ünïcödé-✓"
		if !password.VerifyPassword(cheap.Hash(pw), pw) {
			t.Fatal("a unicode password does not verify")
		}
	})
	t.Run("Defaults", func(t *testing.T) {
		d := password.DefaultParams
		if d.Memory < 19*1024 || d.Time < 2 || d.Threads < 1 {
			t.Fatalf("DefaultPasswordParams %+v are below OWASP's argon2id minimum", d)
		}
	})
}

func TestVerifyPassword(t *testing.T) {
	good := cheap.Hash(testPassword)
	parts := strings.Split(good, "$")
	for name, h := range map[string]string{
		"Empty":        "",
		"Garbage":      "not a hash",
		"Bcrypt":       "$2a$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
		"Argon2i":      strings.Replace(good, "$argon2id$", "$argon2i$", 1),
		"MissingPart":  strings.Join(parts[:5], "$"),
		"ExtraPart":    good + "$extra",
		"BadParams":    strings.Replace(good, "m=64,t=1,p=1", "m=x,t=1,p=1", 1),
		"BadSalt":      strings.Join([]string{"", parts[1], parts[2], parts[3], "!!!", parts[5]}, "$"),
		"BadKey":       strings.Join([]string{"", parts[1], parts[2], parts[3], parts[4], "!!!"}, "$"),
		"EmptyKey":     strings.Join([]string{"", parts[1], parts[2], parts[3], parts[4], ""}, "$"),
		"OtherKey":     strings.Join([]string{"", parts[1], parts[2], parts[3], parts[4], "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, "$"),
		"TruncatedKey": good[:len(good)-4],
		"ZeroTime":     strings.Replace(good, "m=64,t=1,p=1", "m=64,t=0,p=1", 1),
		"ZeroThreads":  strings.Replace(good, "m=64,t=1,p=1", "m=64,t=1,p=0", 1),
		"NegativeTime": strings.Replace(good, "m=64,t=1,p=1", "m=64,t=-1,p=1", 1),
		"HugeThreads":  strings.Replace(good, "m=64,t=1,p=1", "m=64,t=1,p=300", 1),
		"HugeMemory":   strings.Replace(good, "m=64,t=1,p=1", "m=4294967295,t=1,p=1", 1),
		"HugeTime":     strings.Replace(good, "m=64,t=1,p=1", "m=64,t=4294967295,p=1", 1),
		"EmptySalt":    strings.Join([]string{"", parts[1], parts[2], parts[3], "", parts[5]}, "$"),
	} {
		t.Run("Err"+name, func(t *testing.T) {
			if password.VerifyPassword(h, testPassword) {
				t.Fatalf("VerifyPassword accepted %q", h)
			}
		})
	}
}
