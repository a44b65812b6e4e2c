// Package secret seals third-party secrets (provider API keys, OAuth tokens,
// client and webhook secrets) with AES-256-GCM before they reach the
// database. Several keys may be configured: the first seals, all open, so a
// key can be rotated in by putting it first. Each sealed value names the key
// that sealed it.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// prefix versions the sealed format: "v1:<key id>:<base64(nonce|ciphertext)>".
const prefix = "v1"

// ErrUnknownKey means a value was sealed with a key that is not configured.
var ErrUnknownKey = errors.New("secret: sealed with a key that is not configured (AP_SECRET_KEY)")

// Box seals and opens secrets.
type Box struct {
	sealID string
	aeads  map[string]cipher.AEAD
}

// KeyID names a key without revealing it: the start of its SHA-256.
func KeyID(key []byte) string {
	h := sha256.Sum256(key)
	return hex.EncodeToString(h[:4])
}

// New returns a box over 32-byte keys; keys[0] seals.
func New(keys [][]byte) (*Box, error) {
	if len(keys) == 0 {
		return nil, errors.New("secret: no key")
	}
	b := &Box{aeads: map[string]cipher.AEAD{}}
	for i, k := range keys {
		if len(k) != 32 {
			return nil, fmt.Errorf("secret: key %d is %d bytes, want 32", i+1, len(k))
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		id := KeyID(k)
		if i == 0 {
			b.sealID = id
		}
		b.aeads[id] = aead
	}
	return b, nil
}

// Seal encrypts plaintext. The empty string seals to the empty string, so
// "no secret" needs no special case in storage.
func (b *Box) Seal(plaintext string) (string, error) {
	if plaintext == "" {
		return "", nil
	}
	aead := b.aeads[b.sealID]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	// The key id is authenticated data: a value cannot be relabelled.
	sealed := aead.Seal(nonce, nonce, []byte(plaintext), []byte(b.sealID))
	return prefix + ":" + b.sealID + ":" + base64.RawStdEncoding.EncodeToString(sealed), nil
}

// Open decrypts a value of Seal.
func (b *Box) Open(sealed string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	id, err := SealedKeyID(sealed)
	if err != nil {
		return "", err
	}
	aead, ok := b.aeads[id]
	if !ok {
		return "", ErrUnknownKey
	}
	raw, err := base64.RawStdEncoding.DecodeString(sealed[len(prefix)+1+len(id)+1:])
	if err != nil || len(raw) < aead.NonceSize() {
		return "", errors.New("secret: malformed sealed value")
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(id))
	if err != nil {
		return "", errors.New("secret: cannot decrypt (wrong key or tampered value)")
	}
	return string(plain), nil
}

// SealedKeyID is the id of the key a sealed value needs.
func SealedKeyID(sealed string) (string, error) {
	parts := strings.SplitN(sealed, ":", 3)
	if len(parts) != 3 || parts[0] != prefix {
		return "", errors.New("secret: malformed sealed value")
	}
	return parts[1], nil
}

// CanOpen reports whether the box holds the key with id.
func (b *Box) CanOpen(id string) bool {
	_, ok := b.aeads[id]
	return ok
}
