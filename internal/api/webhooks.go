package api

import (
	"context"
	"time"

	"github.com/agentplatform/agentplatform/internal/store"
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
	ID           string    `json:"id"`
	ActivationID string    `json:"activation_id"`
	WebhookID    string    `json:"webhook_id" doc:"The webhook-id header, the same on every attempt"`
	EventType    string    `json:"event_type" enum:"activation_completed,activation_failed"`
	URL          string    `json:"url"`
	Attempt      int       `json:"attempt" doc:"1 for the first try"`
	StatusCode   int       `json:"status_code" doc:"The receiver's HTTP status; 0 when it did not answer"`
	Error        string    `json:"error" doc:"Why the attempt failed; empty on success"`
	DurationMS   int       `json:"duration_ms"`
	CreatedAt    time.Time `json:"created_at"`
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
			URL: d.URL, Attempt: d.Attempt, StatusCode: d.StatusCode, Error: d.Error, DurationMS: d.DurationMS, CreatedAt: d.CreatedAt}
	})
	out.Body.Page = in.page(total)
	return out, nil
}
