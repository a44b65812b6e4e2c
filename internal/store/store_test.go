package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// Every test here runs on SQLite and on PostgreSQL through testdb.ForEach.

func newUser(t testing.TB, s *store.Store, email string, adminIfFirst bool) *store.User {
	t.Helper()
	u := userAt(email)
	require.NoError(t, s.UserCreate(context.Background(), u, adminIfFirst))
	return u
}

func TestUsers(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		first := newUser(t, s, "a@example.com", true)
		require.True(t, first.IsAdmin, "the first user of an empty instance is admin")
		second := newUser(t, s, "b@example.com", true)
		require.False(t, second.IsAdmin)

		dup := &store.User{ID: uuid.NewString(), Email: "a@example.com", CreatedAt: store.Now(), UpdatedAt: store.Now()}
		require.ErrorIs(t, s.UserCreate(ctx, dup, false), store.ErrConflict)

		got, err := s.UserGetByEmail(ctx, "b@example.com")
		require.NoError(t, err)
		require.Equal(t, second.ID, got.ID)
		require.True(t, got.CreatedAt.Equal(second.CreatedAt), "timestamps read back as written: %v vs %v", got.CreatedAt, second.CreatedAt)

		_, err = s.UserGet(ctx, uuid.NewString())
		require.ErrorIs(t, err, store.ErrNotFound)

		got.FirstName, got.IsAdmin = "Bea", true
		require.NoError(t, s.UserUpdate(ctx, got))
		n, err := s.UserCountActiveAdmins(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.NoError(t, s.UserSetPassword(ctx, got.ID, "h2", store.Now()))
		again, err := s.UserGet(ctx, got.ID)
		require.NoError(t, err)
		require.Equal(t, "Bea", again.FirstName)
		require.Equal(t, "h2", again.PasswordHash)

		users, total, err := s.UserList(ctx, 1, 1)
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Len(t, users, 1)
		require.Equal(t, second.ID, users[0].ID)
	})
}

func TestConcurrentFirstUsersMakeOneAdmin(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		s := testdb.Open(t, d)
		var wg sync.WaitGroup
		users := make([]*store.User, 8)
		for i := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				now := store.Now()
				users[i] = &store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@x.io", IsActive: true, CreatedAt: now, UpdatedAt: now}
				require.NoError(t, s.UserCreate(context.Background(), users[i], true))
			}()
		}
		wg.Wait()
		admins := 0
		for _, u := range users {
			if u.IsAdmin {
				admins++
			}
		}
		require.Equal(t, 1, admins)
	})
}

func TestSessions(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "s@example.com", false)
		now := store.Now()
		mk := func(hash string, expires time.Time) *store.Session {
			sess := &store.Session{ID: uuid.NewString(), UserID: u.ID, TokenHash: []byte(hash), CreatedAt: now, ExpiresAt: expires}
			require.NoError(t, s.SessionCreate(ctx, sess))
			return sess
		}
		live := mk("live", now.Add(time.Hour))
		other := mk("other", now.Add(time.Hour))
		mk("old", now.Add(-time.Second))

		sess, user, err := s.SessionGetByTokenHash(ctx, []byte("live"), now)
		require.NoError(t, err)
		require.Equal(t, live.ID, sess.ID)
		require.Equal(t, u.Email, user.Email)
		_, _, err = s.SessionGetByTokenHash(ctx, []byte("old"), now)
		require.ErrorIs(t, err, store.ErrNotFound, "an expired session is not found")

		n, err := s.SessionDeleteExpired(ctx, now)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)

		require.NoError(t, s.SessionDeleteByUser(ctx, u.ID, live.ID))
		_, _, err = s.SessionGetByTokenHash(ctx, []byte("other"), now)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, _, err = s.SessionGetByTokenHash(ctx, []byte("live"), now)
		require.NoError(t, err)
		require.NoError(t, s.SessionDelete(ctx, live.ID))
		_, _, err = s.SessionGetByTokenHash(ctx, []byte("live"), now)
		require.ErrorIs(t, err, store.ErrNotFound)
		_ = other
	})
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "k@example.com", false)
		now := store.Now()
		app := &store.App{ID: uuid.NewString(), UserID: u.ID, Name: "A", Slug: "a", Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.AppCreate(ctx, app))
		require.ErrorIs(t, s.AppCreate(ctx, &store.App{ID: uuid.NewString(), UserID: u.ID, Name: "A", Slug: "a", CreatedAt: now, UpdatedAt: now}), store.ErrConflict)

		exp := now.Add(time.Hour)
		k1 := &store.APIKey{UserID: u.ID, Name: "one", KeyHash: []byte("h1"), KeyPrefix: "ak_1", Scopes: []string{"read:all"}, CreatedAt: now}
		k2 := &store.APIKey{UserID: u.ID, Name: "two", KeyHash: []byte("h2"), KeyPrefix: "ak_2", Scopes: []string{"write:all", "app:access"}, AppID: app.ID, ExpiresAt: &exp, CreatedAt: now}
		require.NoError(t, s.APIKeyCreate(ctx, k1))
		require.NoError(t, s.APIKeyCreate(ctx, k2))
		require.Greater(t, k2.ID, k1.ID)

		got, user, err := s.APIKeyGetByHash(ctx, []byte("h2"))
		require.NoError(t, err)
		require.Equal(t, u.ID, user.ID)
		require.Equal(t, []string{"write:all", "app:access"}, got.Scopes)
		require.Equal(t, app.ID, got.AppID)
		require.NotNil(t, got.ExpiresAt)
		require.True(t, got.ExpiresAt.Equal(exp))
		require.Nil(t, got.LastUsedAt)

		require.NoError(t, s.APIKeyTouch(ctx, k1.ID, now))
		keys, total, err := s.APIKeyListByUser(ctx, u.ID, 10, 0)
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Equal(t, k2.ID, keys[0].ID, "newest first")
		require.NotNil(t, keys[1].LastUsedAt)

		require.NoError(t, s.APIKeyDelete(ctx, k1.ID))
		require.ErrorIs(t, s.APIKeyDelete(ctx, k1.ID), store.ErrNotFound)
		_, _, err = s.APIKeyGetByHash(ctx, []byte("h1"))
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		a := newUser(t, s, "admin@example.com", true)
		b := newUser(t, s, "b@example.com", true)
		for i := range 3 {
			require.NoError(t, s.AuditCreate(ctx, &store.AuditEntry{ActorID: a.ID, Action: "api_key.revoke", ResourceType: "api_key", ResourceID: string(rune('0' + i)), OwnerID: b.ID, Reason: "support", CreatedAt: store.Now()}))
		}
		entries, total, err := s.AuditList(ctx, 2, 0)
		require.NoError(t, err)
		require.Equal(t, 3, total)
		require.Len(t, entries, 2)
		require.Equal(t, "2", entries[0].ResourceID, "newest first")
	})
}

func TestInTxRollsBack(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		boom := errors.New("boom")
		err := s.InTx(ctx, func(tx *store.Store) error {
			now := store.Now()
			require.NoError(t, tx.UserCreate(ctx, &store.User{ID: uuid.NewString(), Email: "tx@x.io", CreatedAt: now, UpdatedAt: now}, false))
			_, raw, ok := tx.RiverTx(ctx)
			require.True(t, ok)
			require.NotNil(t, raw)
			return boom
		})
		require.ErrorIs(t, err, boom)
		_, err = s.UserGetByEmail(ctx, "tx@x.io")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestMigrateIsIdempotentAndReady(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		require.NoError(t, s.Migrate(ctx, testdb.Logger()), "a second migrate is a no-op")
		require.NoError(t, s.Migrated(ctx))
		require.NoError(t, s.Ping(ctx))
	})
}

func TestUnmigratedIsNotReady(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Unmigrated(t, d)
		require.ErrorIs(t, s.Migrated(ctx), store.ErrMigrationsPending)
	})
}

// TestMigratedAfterOwnMigrate: a store that brought its own schema up to
// date is ready without asking the database again. serve's first readiness
// probes used to queue a schema check each behind SQLite's single writer
// connection, and under load one ran past its 2 s deadline and answered
// 503 "migrations pending" (TestSIGTERMDuringRequests in CI).
func TestMigratedAfterOwnMigrate(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		s := testdb.Unmigrated(t, d)
		require.NoError(t, s.Migrate(context.Background(), testdb.Logger()))
		done, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, s.Migrated(done), "no database round trip after a successful Migrate")
	})
}

func TestOpenRejectsUnknownURL(t *testing.T) {
	t.Parallel()
	_, err := store.Open(context.Background(), "mysql://x")
	require.ErrorContains(t, err, "unsupported database URL")
}

// SQLite's connections keep a statement's plan once it is prepared
// (sqliteconn.go): without it River's fetch was parsed at every poll.
func TestSQLiteConnectionsKeepTheirPlans(t *testing.T) {
	t.Parallel()
	s := testdb.Open(t, store.SQLite)
	on, err := s.StablePlans(context.Background())
	require.NoError(t, err)
	require.True(t, on)
}

// River's arrays (lib/pq's types) reach PostgreSQL with the values pq
// would send, encoded by pgx directly (pgarrays.go).
func TestPQArraysKeepTheirValues(t *testing.T) {
	t.Parallel()
	testdb.RequirePostgres(t)
	s := testdb.Open(t, store.Postgres)
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 10, 0, 0, 123456000, time.UTC)
	var text, ints, smalls, json, bytes, times, empty, null string
	require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT $1::text[]::text, $2::bigint[]::text, $3::smallint[]::text, $4::jsonb[]::text,
		$5::bytea[]::text, $6::timestamptz[]::text, $7::text[]::text, coalesce($8::integer[]::text, 'NULL')`,
		pq.Array([]string{"a", "b,c", `"q"`, "", `back\slash`, "NULL"}), pq.Array([]int64{1, -2}), pq.Array([]int16{3, 4}),
		pq.Array([]string{`{"k": [1, "x"]}`, `null`}), pq.Array([][]byte{{0, 1, 255}, nil}), pq.Array([]time.Time{at}),
		pq.Array([]string{}), pq.Array([]int32(nil))).Scan(&text, &ints, &smalls, &json, &bytes, &times, &empty, &null))
	require.Equal(t, `{a,"b,c","\"q\"","","back\\slash","NULL"}`, text)
	require.Equal(t, `{1,-2}`, ints)
	require.Equal(t, `{3,4}`, smalls)
	// A JSON null stays one; pq wrote it unquoted, which PostgreSQL read
	// as SQL NULL (River sends objects only).
	require.Equal(t, `{"{\"k\": [1, \"x\"]}","null"}`, json)
	require.Equal(t, `{"\\x0001ff",NULL}`, bytes)
	var back time.Time
	require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT ($1::timestamptz[])[1]`, pq.Array([]time.Time{at})).Scan(&back))
	require.True(t, at.Equal(back), "%s != %s (%s)", back, at, times)
	require.Equal(t, `{}`, empty)
	require.Equal(t, `NULL`, null)
}
