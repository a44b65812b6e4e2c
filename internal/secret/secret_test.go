package secret

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestSealOpenAndRotate(t *testing.T) {
	t.Parallel()
	old, err := New([][]byte{key(1)})
	require.NoError(t, err)
	sealed, err := old.Seal("sk-live-123")
	require.NoError(t, err)
	require.NotContains(t, sealed, "sk-live")
	require.True(t, strings.HasPrefix(sealed, "v1:"+KeyID(key(1))+":"))
	again, _ := old.Seal("sk-live-123")
	require.NotEqual(t, sealed, again, "a fresh nonce every time")

	// Rotation: a new first key seals, the old one still opens.
	rotated, err := New([][]byte{key(2), key(1)})
	require.NoError(t, err)
	plain, err := rotated.Open(sealed)
	require.NoError(t, err)
	require.Equal(t, "sk-live-123", plain)
	fresh, _ := rotated.Seal("x")
	id, _ := SealedKeyID(fresh)
	require.Equal(t, KeyID(key(2)), id)

	// Without the old key, opening fails loudly.
	only, _ := New([][]byte{key(2)})
	_, err = only.Open(sealed)
	require.ErrorIs(t, err, ErrUnknownKey)
	require.False(t, only.CanOpen(KeyID(key(1))))

	empty, err := old.Seal("")
	require.NoError(t, err)
	require.Empty(t, empty)
	plain, err = old.Open("")
	require.NoError(t, err)
	require.Empty(t, plain)
}

func TestTamperingIsDetected(t *testing.T) {
	t.Parallel()
	b, _ := New([][]byte{key(1)})
	sealed, _ := b.Seal("secret")
	// Flip one bit of the tag: overwriting the last characters with fixed
	// ones leaves the text unchanged once in 4096 seals.
	body := sealed[strings.LastIndex(sealed, ":")+1:]
	raw, err := base64.RawStdEncoding.DecodeString(body)
	require.NoError(t, err)
	raw[len(raw)-1] ^= 1
	tampered := sealed[:len(sealed)-len(body)] + base64.RawStdEncoding.EncodeToString(raw)
	_, err = b.Open(tampered)
	require.Error(t, err)
	for _, bad := range []string{"nope", "v2:x:y", "v1:" + KeyID(key(1)) + ":!!"} {
		_, err := b.Open(bad)
		require.Error(t, err, bad)
	}
	_, err = New([][]byte{[]byte("short")})
	require.Error(t, err)
}
