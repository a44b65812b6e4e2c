package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// PasswordParams are argon2id's cost settings.
type PasswordParams struct {
	Memory  uint32 // KiB
	Time    uint32
	Threads uint8
}

// DefaultPasswordParams follow OWASP's argon2id minimum (19 MiB, 2 passes,
// 1 lane): about 25 ms a hash on one core here, cheap enough for a 2-core
// server, costly enough for an offline attacker.
var DefaultPasswordParams = PasswordParams{Memory: 19 * 1024, Time: 2, Threads: 1}

const saltLen, keyLen = 16, 32

// HashPassword returns the PHC string of password:
// $argon2id$v=19$m=…,t=…,p=…$salt$hash.
func HashPassword(password string, p PasswordParams) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, keyLen)
	return encodePHC(p, salt, key), nil
}

// unmatchableHash is a PHC string with p's costs, a random salt and a random
// key in place of a hash: verifying a password against it runs argon2id in
// full like a stored hash, and no password matches it (short of guessing 256
// random bits). It stands for a hash where none exists (an unknown email)
// without hashing anything: a hash would cost p.Memory of garbage up front.
func unmatchableHash(p PasswordParams) (string, error) {
	buf := make([]byte, saltLen+keyLen)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	return encodePHC(p, buf[:saltLen], buf[saltLen:]), nil
}

// encodePHC is $argon2id$v=19$m=…,t=…,p=…$salt$key.
func encodePHC(p PasswordParams, salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

var errBadHash = errors.New("auth: malformed password hash")

// VerifyPassword reports whether password matches the PHC string encoded,
// comparing in constant time.
func VerifyPassword(encoded, password string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var p PasswordParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return false, errBadHash
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, errBadHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
