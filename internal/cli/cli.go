// Package cli is the agentplatform command line: serve, worker, migrate,
// user create and version. Main takes its environment, arguments and streams
// explicitly so tests drive it like a user would.
package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/config"
	"github.com/agentplatform/agentplatform/internal/server"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/version"
)

// Env is what a command reads from outside: variables and streams.
type Env struct {
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

const usage = `Usage: agentplatform <command> [flags]

Commands:
  serve      run the API and, unless --no-worker, the activation worker
  worker     run only the activation worker
  migrate    apply database migrations and exit
  user       user create --email E --password-stdin [--admin]
  events     print the caller's live events (WebSocket): events --token T [--url U] [--since N] [--until TYPE]
             (the URL defaults to this machine at AP_ADDR)
  version    print the version

Configuration comes from AP_* environment variables (see README); flags of
serve mirror them. Run "agentplatform <command> -h" for its flags.
`

// errUsage means the usage was printed; exit code 2.
var errUsage = errors.New("usage")

// Main runs the command of args and returns the process exit code.
func Main(ctx context.Context, args []string, env Env) int {
	err := run(ctx, args, env)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		return 2
	default:
		fmt.Fprintln(env.Stderr, "agentplatform:", err)
		return 1
	}
}

func run(ctx context.Context, args []string, env Env) error {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return errUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return serve(ctx, rest, env, true)
	case "worker":
		return serve(ctx, rest, env, false)
	case "migrate":
		return migrate(ctx, rest, env)
	case "user":
		if len(rest) == 0 || rest[0] != "create" {
			fmt.Fprint(env.Stderr, "Usage: agentplatform user create --email E --password-stdin [--admin]\n")
			return errUsage
		}
		return userCreate(ctx, rest[1:], env)
	case "events":
		return eventsCmd(ctx, rest, env)
	case "version", "--version", "-v":
		fmt.Fprintf(env.Stdout, "agentplatform %s (api %s)\n", version.Version, version.APIVersion)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, usage)
		return nil
	default:
		fmt.Fprintf(env.Stderr, "unknown command %q\n\n%s", cmd, usage)
		return errUsage
	}
}

// loadConfig reads the environment, then the flags of fs over it.
func loadConfig(name string, args []string, env Env, bind func(*flag.FlagSet, *config.Config)) (*config.Config, error) {
	cfg, err := config.FromEnv(env.Getenv)
	if err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet("agentplatform "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	cfg.BindFlags(fs)
	if bind != nil {
		bind(fs, cfg)
	}
	if err := fs.Parse(args); err != nil {
		// The flag package has printed the error and the flags: a usage
		// error, exit code 2 like an unknown command.
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return nil, errUsage
	}
	return cfg, cfg.Validate()
}

func serve(ctx context.Context, args []string, env Env, httpToo bool) error {
	name := "serve"
	if !httpToo {
		name = "worker"
	}
	cfg, err := loadConfig(name, args, env, func(fs *flag.FlagSet, c *config.Config) {
		if httpToo {
			fs.BoolVar(&c.NoWorker, "no-worker", false, "serve the API only; run activations on worker nodes")
		}
	})
	if err != nil {
		return err
	}
	log := server.NewLogger(cfg, env.Stderr)
	if limit := config.SoftMemoryLimit(); limit > 0 {
		debug.SetMemoryLimit(limit)
		log.Info("soft memory limit: 90% of the cgroup's", "bytes", limit)
	}
	srv, err := server.New(ctx, cfg, log, server.Options{HTTP: httpToo})
	if err != nil {
		return err
	}
	if httpToo {
		if err := srv.Listen(); err != nil {
			srv.Close()
			return err
		}
	}
	srv.Banner(env.Stdout)
	return srv.Run(ctx)
}

func migrate(ctx context.Context, args []string, env Env) error {
	cfg, err := loadConfig("migrate", args, env, nil)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseDSN())
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(env.Stdout, "migrating %s\n", st)
	if err := st.Migrate(ctx, server.NewLogger(cfg, env.Stderr)); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, "database is up to date")
	return nil
}

func userCreate(ctx context.Context, args []string, env Env) error {
	var email, first, last string
	var admin, passwordStdin bool
	cfg, err := loadConfig("user create", args, env, func(fs *flag.FlagSet, _ *config.Config) {
		fs.StringVar(&email, "email", "", "the account's email (required)")
		fs.BoolVar(&passwordStdin, "password-stdin", false, "read the password from standard input (required)")
		fs.BoolVar(&admin, "admin", false, "make the account an admin")
		fs.StringVar(&first, "first-name", "", "first name")
		fs.StringVar(&last, "last-name", "", "last name")
	})
	if err != nil {
		return err
	}
	if email == "" || !passwordStdin {
		return errors.New("user create needs --email and --password-stdin (the password is never a flag: it would show in ps and shell history)")
	}
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read password: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	st, err := store.Open(ctx, cfg.DatabaseDSN())
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx, server.NewLogger(cfg, io.Discard)); err != nil {
		return err
	}
	svc, err := auth.New(st, server.NewLogger(cfg, env.Stderr), auth.Options{SessionTTL: cfg.SessionTTL})
	if err != nil {
		return err
	}
	u, err := svc.CreateUser(ctx, auth.Registration{Email: email, Password: password, ConfirmPassword: password,
		FirstName: first, LastName: last}, admin)
	if err != nil {
		return describe(err)
	}
	role := "user"
	if u.IsAdmin {
		role = "admin"
	}
	fmt.Fprintf(env.Stdout, "created %s %s (id %s)\n", role, u.Email, u.ID)
	return nil
}

// describe words a domain error by its public text ("Email already
// registered"), not its Go chain.
func describe(err error) error {
	if ae, ok := apperr.As(err); ok {
		return errors.New(ae.Detail)
	}
	return err
}
