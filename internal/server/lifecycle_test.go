package server_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/config"
	"github.com/agentplatform/agentplatform/internal/lifecycle"
	"github.com/agentplatform/agentplatform/internal/server"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/testlog"
)

// journal records the services' starts and stops, in order.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(line string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, line)
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.lines...)
}

// watch records a service's successful starts and every stop.
func (j *journal) watch(name string, svc lifecycle.Service) lifecycle.Service {
	return lifecycle.Funcs{
		OnStart: func(ctx context.Context) error {
			if err := svc.Start(ctx); err != nil {
				j.add("failed " + name)
				return err
			}
			j.add("start " + name)
			return nil
		},
		OnStop: func(ctx context.Context) error {
			j.add("stop " + name)
			return svc.Stop(ctx)
		},
	}
}

// TestFailedStartUnwinds: the HTTP address is taken, so the last service
// of a serving worker fails to start. Run returns the error having stopped
// the ones it started, in reverse (River stopped, the worker unregistered),
// and closed the database only after all of them: nothing ran against a
// closed store.
func TestFailedStartUnwinds(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer taken.Close()
		dsn := testdb.URL(t, d)
		env := map[string]string{"AP_DATA_DIR": t.TempDir(), "AP_SECRET_KEY": b64key(7), "AP_DATABASE_URL": dsn,
			"AP_ADDR": taken.Addr().String()}
		cfg, err := config.FromEnv(func(k string) string { return env[k] })
		require.NoError(t, err)
		require.NoError(t, cfg.Validate())
		logs := &testlog.Buffer{}
		srv, err := server.New(context.Background(), cfg, server.NewLogger(cfg, logs),
			server.Options{HTTP: true, Password: auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}})
		require.NoError(t, err)
		j := &journal{}
		srv.WrapServices(j.watch)

		err = srv.Run(context.Background())
		require.ErrorContains(t, err, "start http server")
		require.ErrorContains(t, err, "address already in use")
		require.Equal(t, []string{
			"start store", "start event listener", "start worker", "start queue", "start recovery",
			"failed http server",
			"stop recovery", "stop queue", "stop worker", "stop event listener", "stop store",
		}, j.all())

		select {
		case <-srv.Queue.Client().Stopped():
		default:
			t.Fatal("River still runs")
		}
		require.Error(t, srv.Store.Ping(context.Background()), "the store is closed")
		require.NotContains(t, strings.ToLower(logs.String()), "database is closed")
		require.NotContains(t, strings.ToLower(logs.String()), "closed pool")

		st, err := store.Open(context.Background(), dsn)
		require.NoError(t, err)
		defer st.Close()
		workers, err := st.WorkerList(context.Background())
		require.NoError(t, err)
		require.Empty(t, workers, "the worker unregistered")
	})
}
