package runtimes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

// WebhookMaxResponse caps a webhook agent's answer, which becomes the
// activation's output_data: the output cap of JavaScript runs.
const WebhookMaxResponse = 1 << 20

// WebhookField names a webhook agent's address in refusals.
const WebhookField = "agent_config.url"

// WebhookSecretFunc opens the signing secret of a webhook agent.
type WebhookSecretFunc func(ctx context.Context, agentID string) (string, error)

// Webhook runs webhook agents: the run is POSTed to the agent's url,
// signed per Standard Webhooks with the agent's secret, through the egress
// guard; the JSON answer is the output. Its time is the run's: the context
// carries the agent's timeout and any cancel.
type Webhook struct {
	custom
	secret  WebhookSecretFunc
	baseURL string
	client  *http.Client
	now     func() time.Time
}

// NewWebhook returns the webhook executor. baseURL is the platform's API
// root the agent calls back (AP_PUBLIC_URL + /api/v1), secret opens an
// agent's signing secret, guard checks every address dialled.
func NewWebhook(guard *egress.Guard, baseURL string, secret WebhookSecretFunc) *Webhook {
	return &Webhook{secret: secret, baseURL: baseURL, now: time.Now,
		// No redirect is followed: a POST is not re-sent elsewhere, and a
		// 3xx is a failed run. No timeout of its own: the run's context
		// bounds the call, body included.
		client: guard.Client(egress.Options{Field: WebhookField, MaxBody: WebhookMaxResponse})}
}

// Runtime is "webhook".
func (e *Webhook) Runtime() string { return "webhook" }

// WebhookRequest is what a webhook agent receives (the API's document
// describes it from this type). The agent and app ids are the run's own:
// an installed copy's differ from the publisher's, and the agent key opens
// only routes that take the app id.
type WebhookRequest struct {
	ActivationID string          `json:"activation_id" doc:"The activation this run is; also the webhook-id header's UUID"`
	AgentID      string          `json:"agent_id" doc:"This agent's id (an installed copy's own)"`
	AppID        string          `json:"app_id" doc:"The agent's app: the app id its data and credential routes take"`
	InputData    json.RawMessage `json:"input_data"`
	Context      json.RawMessage `json:"context"`
	AgentKey     string          `json:"agent_key" doc:"An agk_ key, as Authorization: Bearer, for this app's data and credential routes; valid until the run ends"`
	BaseURL      string          `json:"base_url" format:"uri" doc:"The API's root to call back: AP_PUBLIC_URL + /api/v1"`
}

// Execute POSTs the run to the agent and returns its JSON answer. The
// errors name the cause (the status, a refused address, a body that is not
// JSON) and never the URL, whose query or userinfo may carry credentials;
// a timeout or a cancel is the context's, which the caller reports.
func (e *Webhook) Execute(ctx context.Context, run *executor.Run) (*executor.Result, error) {
	var cfg struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(run.Config, &cfg); err != nil || cfg.URL == "" {
		return nil, errors.New("Webhook agent has no agent_config.url")
	}
	secret, err := e.secret(ctx, run.AgentID)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(WebhookRequest{ActivationID: run.ID, AgentID: run.AgentID, AppID: run.AppID, InputData: orJSON(run.Input, "{}"),
		Context: orJSON(run.Context, "{}"), AgentKey: run.AgentKey, BaseURL: e.baseURL})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("Webhook agent call failed: agent_config.url is not a usable URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "AgentPlatform-WebhookAgents/1")
	// The message id is the activation's: a run made again after a crash
	// (at-least-once) carries the same one, so the receiver can tell.
	if err := webhook.SignHeaders(req.Header, "msg_"+run.ID, e.now(), body, secret); err != nil {
		return nil, fmt.Errorf("Webhook agent's signing secret is unusable: %w", err)
	}
	res, err := e.client.Do(req)
	if err != nil {
		return nil, e.callError(ctx, err)
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode >= 300 && res.StatusCode <= 399:
		return nil, fmt.Errorf("Webhook agent answered %d: redirects are not followed", res.StatusCode)
	case res.StatusCode < 200 || res.StatusCode > 299:
		return nil, fmt.Errorf("Webhook agent answered %d", res.StatusCode)
	}
	out, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, e.callError(ctx, err)
	}
	if !json.Valid(out) {
		return nil, fmt.Errorf("Webhook agent answered %d with a body that is not JSON", res.StatusCode)
	}
	return &executor.Result{Output: out}, nil
}

// callError is the error of a call that got no usable answer. The run's
// own end (its timeout, a cancel) is returned as the context's error, for
// the caller to name; everything else says what happened, never where.
func (e *Webhook) callError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("Webhook agent call failed: %s", egress.Describe(err))
}

// orJSON is raw, or def when raw is empty.
func orJSON(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(def)
	}
	return raw
}
