package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Params are the argon2id costs.
type Params struct {
	Time    uint32
	Memory  uint32 // KiB
	Threads uint8
}

// Bounds on the costs a stored hash may name, so that a corrupt or hostile hash can
// neither panic argon2 (zero passes or lanes) nor ask for an absurd amount of memory.
const (
	maxPasswordTime   = 64
	maxPasswordMemory = 1 << 20 // KiB: 1 GiB
)

// DefaultParams follow OWASP's argon2id minimum (19 MiB, 2 passes, 1 lane).
var DefaultParams = Params{Time: 2, Memory: 19 * 1024, Threads: 1}

// Hash returns the PHC-formatted argon2id hash of password with a fresh salt.
func (pp Params) Hash(password string) string {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, pp.Time, pp.Memory, pp.Threads, 32)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, pp.Memory, pp.Time,
		pp.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// VerifyPassword reports whether password matches a hash made by Hash, with the costs
// recorded in the hash.
func VerifyPassword(hash, password string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var pp Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &pp.Memory, &pp.Time, &pp.Threads); err != nil {
		return false
	}
	if pp.Time < 1 || pp.Time > maxPasswordTime || pp.Threads < 1 || pp.Memory > maxPasswordMemory {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) == 0 || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, pp.Time, pp.Memory, pp.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}
