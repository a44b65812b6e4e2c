package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/config"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/server"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func b64key(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }

func newServer(t *testing.T, dir, keys string) (*server.Server, error) {
	cfg, err := config.FromEnv(func(k string) string {
		return map[string]string{"AP_DATA_DIR": dir, "AP_SECRET_KEY": keys}[k]
	})
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	return server.New(context.Background(), cfg, testdb.Logger(), server.Options{})
}

// TestStartupRefusesSecretsItCannotDecrypt: a secret sealed with a key that
// is no longer configured stops startup with a message naming the key.
func TestStartupRefusesSecretsItCannotDecrypt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := newServer(t, dir, b64key(1))
	require.NoError(t, err)
	ctx := context.Background()
	now := store.Now()
	u := &store.User{ID: uuid.NewString(), Email: "a@example.com", PasswordHash: "h", IsActive: true, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, srv.Store.UserCreate(ctx, u, true))
	app := &store.App{ID: uuid.NewString(), UserID: u.ID, Name: "A", Slug: "a", Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, srv.Store.AppCreate(ctx, app))
	sealed, err := srv.Secrets.Seal("whsec_abc")
	require.NoError(t, err)
	srv.Close()

	db, err := sql.Open("sqlite", filepath.Join(dir, "agentplatform.db"))
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE apps SET webhook_secret_enc = $1 WHERE id = $2`, sealed, app.ID)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	// The old key second: it still opens, and the new one seals.
	srv, err = newServer(t, dir, b64key(2)+","+b64key(1))
	require.NoError(t, err)
	srv.Close()

	// The old key gone: refuse to start, naming it.
	_, err = newServer(t, dir, b64key(2))
	require.ErrorContains(t, err, secret.KeyID(bytes.Repeat([]byte{1}, 32)))
	require.ErrorContains(t, err, "AP_SECRET_KEY")
}
