package api

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

type appIDPath struct {
	AppID string `path:"app_id" doc:"App id"`
}

type webhookSecretOutput struct {
	Body struct {
		Secret string `json:"secret" doc:"whsec_ and base64 bytes: the HMAC-SHA256 key (base64-decoded) of the Standard Webhooks signature"`
	}
}

func (a *API) getWebhookSecret(ctx context.Context, in *appIDPath) (*webhookSecretOutput, error) {
	return webhookSecretOut(a.Webhooks.Secret(ctx, mustCaller(ctx), in.AppID))
}

func (a *API) rotateWebhookSecret(ctx context.Context, in *appIDPath) (*webhookSecretOutput, error) {
	return webhookSecretOut(a.Webhooks.RotateSecret(ctx, mustCaller(ctx), in.AppID))
}

func webhookSecretOut(secret string, err error) (*webhookSecretOutput, error) {
	if err != nil {
		return nil, err
	}
	out := &webhookSecretOutput{}
	out.Body.Secret = secret
	return out, nil
}

// WebhookDelivery is one attempt to deliver an activation's event.
type WebhookDelivery struct {
	ID           string `json:"id"`
	ActivationID string `json:"activation_id"`
	WebhookID    string `json:"webhook_id" doc:"The webhook-id header, the same on every attempt"`
	EventType    string `json:"event_type" enum:"activation_completed,activation_failed"`
	URL          string `json:"url" doc:"The webhook URL, without its query string or userinfo"`
	Attempt      int    `json:"attempt" doc:"1 for the first try"`
	StatusCode   int    `json:"status_code" doc:"The receiver's HTTP status; 0 when it did not answer"`
	Error        string `json:"error" doc:"Why the attempt failed, in short (e.g. receiver answered 503, no answer within 15s, could not connect); empty on success"`
	State        string `json:"state" enum:"delivered,retrying,gave_up" doc:"delivered: the receiver answered 2xx; retrying: this attempt failed and another follows at next_attempt_at; gave_up: this attempt failed and none follows"`
	// NextAttemptAt is set while retrying.
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty" doc:"When state is retrying: the earliest time of the next attempt"`
	DurationMS    int        `json:"duration_ms"`
	CreatedAt     time.Time  `json:"created_at"`
}

// deliveriesDoc describes the deliveries route: what a delivery is, when
// it succeeds, and how long an attempt may take.
func deliveriesDoc(o huma.Operation) huma.Operation {
	o.Description = fmt.Sprintf("Every attempt to POST the activation's final event to its webhook URL (metadata.webhook_url, "+
		"else the agent's webhook_url), signed per Standard Webhooks with the app's secret. Only a 2xx answer is a success; "+
		"redirects are not followed (a 3xx is a failed attempt). An attempt that gets no answer within %s fails. "+
		"Failed attempts are retried after %s; addresses on private networks are refused (unless AP_EGRESS_ALLOW allows "+
		"them) and not retried. For 24 h after the app's secret is rotated, deliveries carry the old secret's signature too.",
		webhook.DefaultTimeout, retrySchedule())
	return o
}

func retrySchedule() string {
	parts := make([]string, len(webhook.DefaultRetryDelays))
	for i, d := range webhook.DefaultRetryDelays {
		parts[i] = strings.Replace(strings.Replace(d.String(), "m0s", "m", 1), "h0m", "h", 1) // 2h0m0s: 2h
	}
	return strings.Join(parts, ", ")
}

type listDeliveriesInput struct {
	ActivationID string `path:"activation_id" doc:"Activation id"`
	PageParams
}

type listDeliveriesOutput struct {
	Body struct {
		Deliveries []WebhookDelivery `json:"deliveries"`
		Page
	}
}

func (a *API) listDeliveries(ctx context.Context, in *listDeliveriesInput) (*listDeliveriesOutput, error) {
	items, total, err := a.Webhooks.Deliveries(ctx, mustCaller(ctx), in.ActivationID, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &listDeliveriesOutput{}
	out.Body.Deliveries = mapAll(items, func(d *store.WebhookDelivery) WebhookDelivery {
		return WebhookDelivery{ID: d.ID, ActivationID: d.ActivationID, WebhookID: d.WebhookID, EventType: d.EventType,
			URL: d.URL, Attempt: d.Attempt, StatusCode: d.StatusCode, Error: d.Error, State: d.State, NextAttemptAt: d.NextAttempt,
			DurationMS: d.DurationMS, CreatedAt: d.CreatedAt}
	})
	out.Body.Page = in.page(total)
	return out, nil
}
