package api

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/executor/runtimes"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

// The document's `webhooks` section says what the platform POSTs out
// (DESIGN §4 Operations): the event that ends an activation, delivered to
// its webhook URL, and the request a webhook custom agent receives. Their
// bodies are the component schemas the rest of the document uses, by $ref.

// WebhookAgentRequest is the body a webhook custom agent receives.
type WebhookAgentRequest runtimes.WebhookRequest

// Webhook names, the keys of the document's `webhooks`.
const (
	activationEndedHook = "activation-ended"
	webhookAgentHook    = "webhook-agent-run"
)

// documentWebhooks adds the webhooks to the document; finishDocument then
// shapes their schemas with the rest.
func documentWebhooks(oapi *huma.OpenAPI) {
	registry := oapi.Components.Schemas
	ended := union(registry, "ActivationWebhookEvent",
		"An activation's event, as the WebSocket sends it: the one that ends it, completed with its output_data or failed with its error; "+
			"or, for agents with tools, activation_waiting when its run waits for an answer (an approval, client tool results).",
		map[string]reflect.Type{
			"activation_completed": reflect.TypeFor[ActivationCompletedEvent](),
			"activation_failed":    reflect.TypeFor[ActivationFailedEvent](),
			"activation_waiting":   reflect.TypeFor[ActivationWaitingEvent](),
		})
	jsonBody := func(desc string, s *huma.Schema) *huma.RequestBody {
		return &huma.RequestBody{Description: desc, Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: s}}}
	}
	oapi.Webhooks = map[string]*huma.PathItem{
		activationEndedHook: {Post: &huma.Operation{
			OperationID: "activation-ended-webhook",
			Summary:     "An activation ended",
			Tags:        []string{"webhooks"},
			Description: fmt.Sprintf("When an activation ends (or its run starts to wait for an answer), its event is POSTed to `metadata.webhook_url`, else to the agent's "+
				"`webhook_url`, signed per Standard Webhooks with the app's secret (`GET /api/v1/apps/{app_id}/webhook-secret`). "+
				"Each attempt is recorded (`GET /api/v1/activations/{activation_id}/deliveries`). `seq` is 0: a delivery is not "+
				"numbered in the event stream; `webhook-id` tells deliveries apart, the same on every attempt. "+
				"Only a 2xx answer within %s is a success; anything else is retried after %s.",
				webhook.DefaultTimeout, retrySchedule()),
			Parameters: signatureHeaders(
				"The delivery's id: `msg_` and a UUID, the same on every attempt of this delivery (deduplicate on it).",
				"the app's webhook secret", " For 24 h after the secret is rotated, the old secret's signature follows, space-separated: "+
					"accept the request if one of them matches."),
			RequestBody: jsonBody("The event, as the WebSocket sends it.", ended),
			Responses: map[string]*huma.Response{
				"2XX": {Description: "Delivered; the body is ignored."},
				"default": {Description: fmt.Sprintf("Any other answer (a 3xx too: redirects are not followed), or none within %s: "+
					"the attempt failed and is retried after %s.", webhook.DefaultTimeout, retrySchedule())},
			},
			// Not the API's credentials: the receiver checks the signature.
			Security: []map[string][]string{},
		}},
		webhookAgentHook: {Post: &huma.Operation{
			OperationID: "webhook-agent-run",
			Summary:     "A webhook agent runs",
			Tags:        []string{"agents"},
			Description: "A custom agent with `agent_config: {runtime: webhook, url}` runs as a POST to its `url`, signed per " +
				"Standard Webhooks with the agent's secret (`whsec_…`, yours or generated and then shown once). The agent may call " +
				"`base_url` with `agent_key` while the run lasts. Its JSON answer is the activation's `output_data`.",
			Parameters: signatureHeaders(
				"`msg_` and the activation's id: a run made again after a worker died carries the same one.",
				"the agent's secret", ""),
			RequestBody: jsonBody("The run: its ids, input and context, and how to call the API back.",
				registry.Schema(reflect.TypeFor[WebhookAgentRequest](), true, "")),
			Responses: map[string]*huma.Response{
				"2XX": {Description: "The activation completes with this JSON as its `output_data`.",
					Content: map[string]*huma.MediaType{"application/json": {Schema: anyJSON(registry)}}},
				"default": {Description: fmt.Sprintf("Any other status (a 3xx too: redirects are not followed), a body that is not JSON "+
					"or is over %d MiB, or no answer within the agent's `timeout_seconds`: the activation fails, naming the cause.",
					runtimes.WebhookMaxResponse>>20)},
			},
			Security: []map[string][]string{},
		}},
	}
}

// signatureHeaders are the Standard Webhooks headers, as parameters: the
// id as idDesc says, the signature made with secret.
func signatureHeaders(idDesc, secret, rotation string) []*huma.Param {
	header := func(name, desc, pattern string) *huma.Param {
		return &huma.Param{Name: name, In: "header", Required: true, Description: desc,
			Schema: &huma.Schema{Type: huma.TypeString, Pattern: pattern}}
	}
	return []*huma.Param{
		header(webhook.HeaderID, idDesc, `^msg_[0-9a-f-]{36}$`),
		header(webhook.HeaderTimestamp, "When it was signed, in Unix seconds: refuse a timestamp far from now "+
			"(Standard Webhooks suggests 5 minutes), which stops replays.", `^[0-9]+$`),
		header(webhook.HeaderSignature, "`v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed by "+
			"the bytes of "+secret+" (the base64 after `whsec_`)."+rotation, `^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$`),
	}
}

// inlineWebhookBodies writes into each webhook the body schema that only
// webhooks use, in place of its $ref, and drops that component: generators
// prune the components no path reaches (oapi-codegen v2.8.2 does, yet
// still emits webhook code naming them, which then does not compile).
// The components such a body refers to are reached from paths, and stay.
func inlineWebhookBodies(oapi *huma.OpenAPI) {
	registry := oapi.Components.Schemas
	fromPaths := map[*huma.Schema]bool{}
	reachFromPaths(oapi, fromPaths, fromPaths)
	forEachWebhook(oapi, func(op *huma.Operation) {
		for _, mt := range op.RequestBody.Content {
			if mt.Schema == nil || mt.Schema.Ref == "" {
				continue
			}
			s := registry.SchemaFromRef(mt.Schema.Ref)
			if s == nil || fromPaths[s] {
				continue
			}
			delete(registry.Map(), strings.TrimPrefix(mt.Schema.Ref, "#/components/schemas/"))
			mt.Schema = s
		}
	})
}

// forEachWebhook calls fn for each webhook's operation.
func forEachWebhook(oapi *huma.OpenAPI, fn func(*huma.Operation)) {
	for _, item := range oapi.Webhooks {
		if item.Post != nil {
			fn(item.Post)
		}
	}
}
