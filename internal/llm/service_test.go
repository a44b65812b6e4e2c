package llm_test

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// bundle is a service over a real database of one dialect.
type bundle struct {
	st  *store.Store
	svc *llm.Service
}

func setup(t testing.TB, d store.Dialect, opts llm.Options) *bundle {
	t.Helper()
	st := testdb.Open(t, d)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secret.New([][]byte{key})
	require.NoError(t, err)
	a, err := auth.New(st, testdb.Logger(), auth.Options{Password: auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}})
	require.NoError(t, err)
	if opts.Egress == nil {
		opts.Egress = egress.New(egresstest.AllowPrefixes()) // the fakes' address
	}
	svc, err := llm.NewService(st, box, a, opts)
	require.NoError(t, err)
	return &bundle{st: st, svc: svc}
}

func (b *bundle) user(t testing.TB) *auth.Caller {
	t.Helper()
	now := store.Now()
	u := &store.User{ID: uuid.Must(uuid.NewV7()).String(), Email: uuid.NewString() + "@x.io", PasswordHash: "h", IsActive: true, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, b.st.UserCreate(context.Background(), u, false))
	return &auth.Caller{UserID: u.ID, Kind: auth.KindSession}
}

func (b *bundle) create(t *testing.T, c *auth.Caller, in llm.Input) *llm.Provider {
	t.Helper()
	p, err := b.svc.Create(context.Background(), c, in)
	require.NoError(t, err)
	return p
}

func requireUnknown(t *testing.T, err error, id string) {
	t.Helper()
	ae, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apperr.Validation, ae.Kind)
	require.Equal(t, "provider_id", ae.Field)
	require.Equal(t, "Unknown LLM provider: "+id, ae.Detail)
}

func TestResolveDefaults(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()

		// Nothing configured: echo.
		b := setup(t, d, llm.Options{})
		alice := b.user(t)
		r, err := b.svc.Resolve(ctx, alice.UserID, "")
		require.NoError(t, err)
		require.Equal(t, llm.Resolved{Client: r.Client, ProviderID: "echo", ProviderType: "echo", DefaultModel: "echo"}, *r)
		for _, id := range []string{"openai", "anthropic", "nope", uuid.NewString(), "'; DROP TABLE x"} {
			_, err = b.svc.Resolve(ctx, alice.UserID, id)
			requireUnknown(t, err, id)
		}

		// openai configured: the default when the user marked none.
		oa := llmtest.NewOpenAI(t)
		b = setup(t, d, llm.Options{OpenAIAPIKey: "sk-system", OpenAIBaseURL: oa.URL})
		alice, bob := b.user(t), b.user(t)
		r, err = b.svc.Resolve(ctx, alice.UserID, "")
		require.NoError(t, err)
		require.Equal(t, "openai", r.ProviderID)
		require.Equal(t, llm.DefaultOpenAIModel, r.DefaultModel)
		res, err := r.Client.Complete(ctx, llm.Request{Model: r.DefaultModel, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
		require.NoError(t, err)
		require.Equal(t, "reply to: hi", res.Text)
		require.Equal(t, "Bearer sk-system", oa.Requests()[0].Auth)
		_, err = b.svc.Resolve(ctx, alice.UserID, "anthropic")
		requireUnknown(t, err, "anthropic")

		// A provider marked is_default wins, for its owner only.
		mine := b.create(t, alice, llm.Input{Name: ptr("local"), Type: ptr(llm.TypeEcho), IsDefault: ptr(true)})
		r, err = b.svc.Resolve(ctx, alice.UserID, "")
		require.NoError(t, err)
		require.Equal(t, mine.ID, r.ProviderID)
		r, err = b.svc.Resolve(ctx, bob.UserID, "")
		require.NoError(t, err)
		require.Equal(t, "openai", r.ProviderID)
		_, err = b.svc.Resolve(ctx, bob.UserID, mine.ID)
		requireUnknown(t, err, mine.ID)
		r, err = b.svc.Resolve(ctx, alice.UserID, "echo")
		require.NoError(t, err)
		require.Equal(t, "echo", r.ProviderID)
	})
}

func TestUserProviderCallsWithItsSealedKey(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, d, llm.Options{})
		alice := b.user(t)
		an := llmtest.NewAnthropic(t)
		p := b.create(t, alice, llm.Input{Name: ptr("claude"), Type: ptr(llm.TypeAnthropic), BaseURL: ptr(an.URL),
			APIKey: ptr("sk-ant-very-secret"), Models: &[]string{"claude-x", "claude-y"}})
		require.True(t, p.HasAPIKey)
		require.Equal(t, "claude-x", p.DefaultModel, "the first model is the default")

		// At rest: sealed, never the key.
		var enc string
		require.NoError(t, b.st.DB().QueryRowContext(ctx, `SELECT api_key_enc FROM llm_providers WHERE name = 'claude'`).Scan(&enc))
		require.NotContains(t, enc, "sk-ant-very-secret")
		require.True(t, strings.HasPrefix(enc, "v1:"), enc)

		r, err := b.svc.Resolve(ctx, alice.UserID, p.ID)
		require.NoError(t, err)
		require.Equal(t, llm.TypeAnthropic, r.ProviderType)
		require.Equal(t, "claude-x", r.DefaultModel)
		res, err := r.Client.Complete(ctx, llm.Request{Model: r.DefaultModel, Messages: []llm.Message{{Role: llm.RoleUser, Content: "yo"}}})
		require.NoError(t, err)
		require.Equal(t, p.ID, res.Provider)
		require.Equal(t, "sk-ant-very-secret", an.Requests()[0].Auth)
	})
}

func TestResolveCachesUntilChanged(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, d, llm.Options{})
		alice := b.user(t)
		oa := llmtest.NewOpenAI(t)
		p := b.create(t, alice, llm.Input{Name: ptr("o"), Type: ptr(llm.TypeOpenAICompatible), BaseURL: ptr(oa.URL), APIKey: ptr("k1")})

		first, err := b.svc.Resolve(ctx, alice.UserID, p.ID)
		require.NoError(t, err)
		again, err := b.svc.Resolve(ctx, alice.UserID, p.ID)
		require.NoError(t, err)
		require.Same(t, first.Client, again.Client, "an unchanged provider reuses its client")

		_, err = b.svc.Update(ctx, alice, p.ID, llm.Input{APIKey: ptr("k2")})
		require.NoError(t, err)
		changed, err := b.svc.Resolve(ctx, alice.UserID, p.ID)
		require.NoError(t, err)
		require.NotSame(t, first.Client, changed.Client)
		_, err = changed.Client.Complete(ctx, llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
		require.NoError(t, err)
		require.Equal(t, "Bearer k2", oa.Requests()[0].Auth, "the new key is used")

		// Concurrent resolutions and changes are safe (run with -race).
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for range 20 {
					if i == 0 {
						_, err := b.svc.Update(ctx, alice, p.ID, llm.Input{Models: &[]string{uuid.NewString()}})
						require.NoError(t, err)
						continue
					}
					_, err := b.svc.Resolve(ctx, alice.UserID, p.ID)
					require.NoError(t, err)
				}
			})
		}
		wg.Wait()

		require.NoError(t, b.svc.Delete(ctx, alice, p.ID))
		_, err = b.svc.Resolve(ctx, alice.UserID, p.ID)
		requireUnknown(t, err, p.ID)
	})
}

// Requests that mark different providers default at the same moment leave
// exactly one marked (a unique index, and a retry that unmarks the winner).
func TestConcurrentDefaults(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, d, llm.Options{})
		alice := b.user(t)
		ids := make([]string, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				p, err := b.svc.Create(ctx, alice, llm.Input{Name: ptr(uuid.NewString()), Type: ptr(llm.TypeEcho), IsDefault: ptr(true)})
				require.NoError(t, err)
				ids[i] = p.ID
			})
		}
		wg.Wait()
		for range 3 {
			for _, id := range ids {
				wg.Go(func() {
					_, err := b.svc.Update(ctx, alice, id, llm.Input{IsDefault: ptr(true)})
					require.NoError(t, err)
				})
			}
			wg.Wait()
		}
		list, _, err := b.svc.List(ctx, alice, 100, 0)
		require.NoError(t, err)
		defaults := 0
		for _, p := range list {
			if p.IsDefault {
				defaults++
			}
		}
		require.Equal(t, 1, defaults)

		// A duplicate name is still a 409 when the request also marks default.
		_, err = b.svc.Create(ctx, alice, llm.Input{Name: ptr(list[1].Name), Type: ptr(llm.TypeEcho), IsDefault: ptr(true)})
		require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)
	})
}

// TestManyCallsKeepTheirConnections: the clients of the system providers
// and of users' own keep as many idle connections per host as calls were
// in flight (IdleConns): a second round of 50 concurrent calls to the same
// provider reuses the first round's connections instead of opening (and
// then closing) one per call, as Go's default of 2 a host would.
func TestManyCallsKeepTheirConnections(t *testing.T) {
	t.Parallel()
	const calls = 50
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		system, own := llmtest.NewOpenAI(t), llmtest.NewOpenAI(t)
		guard := egress.New(egresstest.AllowPrefixes())
		guard.IdleConns = 1000
		b := setup(t, d, llm.Options{OpenAIAPIKey: "sk-system", OpenAIBaseURL: system.URL, Egress: guard, IdleConns: 1000})
		alice := b.user(t)
		mine := b.create(t, alice, llm.Input{Name: ptr("own"), Type: ptr(llm.TypeOpenAICompatible), BaseURL: ptr(own.URL), Models: &[]string{"m"}})
		for _, c := range []struct {
			fake     *llmtest.Server
			provider string
		}{{system, "openai"}, {own, mine.ID}} {
			r, err := b.svc.Resolve(ctx, alice.UserID, c.provider)
			require.NoError(t, err)
			round := func() {
				release := c.fake.Block()
				defer release()
				before := c.fake.Calls()
				var wg sync.WaitGroup
				for range calls {
					wg.Go(func() {
						_, err := r.Client.Complete(ctx, llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
						require.NoError(t, err)
					})
				}
				c.fake.WaitCalls(t, before+calls) // all open at once
				release()
				wg.Wait()
			}
			round()
			require.Equal(t, calls, c.fake.Conns())
			round()
			// A connection put back a moment after its call returned
			// may miss the next round: a few, never most.
			require.Less(t, c.fake.Conns(), calls+calls/5, "connections opened for %s", c.provider)
		}
	})
}
