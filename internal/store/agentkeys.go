package store

import (
	"context"
	"database/sql"
	"time"
)

// AgentKey is the credential of one running activation of a custom agent;
// only the key's hash is stored.
type AgentKey struct {
	ActivationID string
	KeyHash      []byte
	UserID       string
	AppID        string
	CreatedAt    time.Time
}

// AgentKeyPut stores k as the key of its activation, replacing the key of
// an earlier run of it, provided the activation is running: a run that was
// cancelled before it got its key leaves no key behind (ErrNotFound).
// The user and the app are the activation's own.
func (s *Store) AgentKeyPut(ctx context.Context, k *AgentKey) error {
	// Parameters in a select list have no type of their own.
	hash, at := s.d.cast("$2", "bytea"), s.d.cast("$3", "timestamptz")
	err := s.writer().QueryRowContext(ctx, `
		INSERT INTO agent_keys (activation_id, key_hash, user_id, app_id, created_at)
		SELECT id, `+hash+`, user_id, app_id, `+at+` FROM activations
		WHERE id = $1 AND status = 'running' AND app_id IS NOT NULL
		ON CONFLICT (activation_id) DO UPDATE SET key_hash = excluded.key_hash, created_at = excluded.created_at
		RETURNING user_id, app_id`, k.ActivationID, k.KeyHash, s.ts(k.CreatedAt)).Scan(&k.UserID, &k.AppID)
	return mapErr(err)
}

// AgentKeyGetByHash returns the key with that hash and its user, in one
// read, provided its activation is running: whatever path ended the
// activation, its key opens nothing from then on, even before the end's
// transaction deleted it.
func (s *Store) AgentKeyGetByHash(ctx context.Context, hash []byte) (*AgentKey, *User, error) {
	var k AgentKey
	var u User
	err := s.reader().QueryRowContext(ctx, `
		SELECT k.activation_id, k.user_id, k.app_id, k.created_at,
		       u.id, u.email, u.password_hash, u.first_name, u.last_name, u.is_active, u.is_admin, u.created_at, u.updated_at
		FROM agent_keys k
		JOIN users u ON u.id = k.user_id
		JOIN activations a ON a.id = k.activation_id AND a.status = 'running'
		WHERE k.key_hash = $1`, hash).Scan(&k.ActivationID, &k.UserID, &k.AppID, &k.CreatedAt,
		&u.ID, &u.Email, &u.PasswordHash, &u.FirstName, &u.LastName, &u.IsActive, &u.IsAdmin, &u.CreatedAt, &u.UpdatedAt)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	k.KeyHash = hash
	return &k, &u, nil
}

// AgentKeyDeleteEnded deletes the keys whose activation no longer runs
// (those keys open nothing already: AgentKeyGetByHash) and returns how
// many it deleted.
func (s *Store) AgentKeyDeleteEnded(ctx context.Context) (int64, error) {
	res, err := s.writer().ExecContext(ctx, `DELETE FROM agent_keys WHERE NOT EXISTS (
		SELECT 1 FROM activations a WHERE a.id = agent_keys.activation_id AND a.status = 'running')`)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// AgentKeysValid returns which of userID's activations among those given
// still have a valid key (their activation running, their user active);
// long-lived connections ask it again when credentials change.
func (s *Store) AgentKeysValid(ctx context.Context, userID string, activationIDs []string) (map[string]bool, error) {
	valid := map[string]bool{}
	if len(activationIDs) == 0 {
		return valid, nil
	}
	args := []any{userID}
	for _, id := range activationIDs {
		args = append(args, id)
	}
	err := s.credentialRows(ctx, `SELECT k.activation_id FROM agent_keys k
		JOIN users u ON u.id = k.user_id
		JOIN activations a ON a.id = k.activation_id AND a.status = 'running'
		WHERE k.user_id = $1 AND u.is_active AND k.activation_id IN (`+placeholders(2, len(activationIDs))+`)`, args,
		func(rows *sql.Rows) error {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			valid[id] = true
			return nil
		})
	return valid, err
}
