package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Token prefixes tell at a glance (and to secret scanners) what a bearer
// token is.
const (
	PrefixSession  = "st_"
	PrefixAPIKey   = "ak_"
	PrefixAgentKey = "agk_"
)

// keyPrefixLen is how much of an API key is kept in clear to recognise it.
const keyPrefixLen = 11

// NewToken returns a random token with prefix and its SHA-256 hash, which is
// all the database ever holds.
func NewToken(prefix string) (token string, hash []byte) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("auth: no randomness: " + err.Error()) // crypto/rand never fails on Linux
	}
	token = prefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token)
}

// HashToken is the stored form of a token.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// BearerToken extracts the token of an "Authorization: Bearer …" header.
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
