// Command agentplatform is the Agent Platform server: one binary that serves
// the API, runs activation workers and manages the database. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentplatform/agentplatform/internal/cli"
)

func main() {
	// SIGTERM and Ctrl-C end the context: the server drains and exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Env{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
