package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/agentplatform/agentplatform/internal/config"
)

// eventsCmd tails the caller's event stream: one JSON event a line, until
// --count events were printed or the process is stopped.
func eventsCmd(ctx context.Context, args []string, env Env) error {
	cfg, err := config.FromEnv(env.Getenv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("agentplatform events", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	base := fs.String("url", localURL(cfg), "the platform's URL (default: this machine at AP_ADDR)")
	token := fs.String("token", env.Getenv("AP_TOKEN"), "an API key or session token (AP_TOKEN)")
	since := fs.Int64("since", -1, "first replay the events after this seq (0: all kept)")
	activation := fs.String("activation-id", "", "only this activation's events")
	appID := fs.String("app-id", "", "only this app's events")
	chatID := fs.String("chat-id", "", "only this chat's events")
	count := fs.Int("count", 0, "exit after this many events (0: never)")
	until := fs.String("until", "", "exit after an event of this type, e.g. activation_completed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *token == "" {
		return errors.New("events needs --token (or AP_TOKEN)")
	}
	q := url.Values{}
	for k, v := range map[string]string{"activation_id": *activation, "app_id": *appID, "chat_id": *chatID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if *since >= 0 {
		q.Set("since", strconv.FormatInt(*since, 10))
	}
	u, err := socketURL(*base, q)
	if err != nil {
		return err
	}
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + *token}}})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", u, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 22)
	for n := 0; *count == 0 || n < *count; n++ {
		_, data, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		fmt.Fprintln(env.Stdout, string(data))
		if *until != "" && strings.Contains(string(data), `"type":"`+*until+`"`) {
			break
		}
	}
	return conn.Close(websocket.StatusNormalClosure, "")
}

// localURL is where a server started with cfg listens, seen from this
// machine: AP_ADDR with an unspecified host made loopback, https with
// AP_TLS_CERT.
func localURL(cfg *config.Config) string {
	scheme := "http"
	if cfg.TLSCert != "" {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return scheme + "://" + cfg.Addr // the dial names what is wrong with it
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// socketURL is the event stream's WebSocket URL on the platform at base.
func socketURL(base string, q url.Values) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err == nil {
		switch u.Scheme {
		case "http", "ws":
			u.Scheme = "ws"
		case "https", "wss":
			u.Scheme = "wss"
		default:
			err = errors.New("not an http(s) URL")
		}
	}
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("--url %q: expected the platform's http(s) URL, e.g. http://127.0.0.1:8080", base)
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/api/v1/ws"
	u.RawQuery = q.Encode()
	return u.String(), nil
}
