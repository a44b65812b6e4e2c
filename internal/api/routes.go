package api

import (
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
)

// routes is the one place that lists every route and the rule its caller
// must meet (auth.Public, User, AppUse, SessionOnly, AdminOnly, and
// Account/AccountRead for account-level things, which a key bound to one
// app may not reach). A key bound to one app sees no other: a route's
// {app_id} is checked by the middleware, and every resource by auth.Reach.
func (a *API) routes() {
	op := func(id, method, path, summary string, tags ...string) huma.Operation {
		return huma.Operation{OperationID: id, Method: method, Path: path, Summary: summary, Tags: tags}
	}
	created := func(o huma.Operation) huma.Operation { o.DefaultStatus = http.StatusCreated; return o }
	noContent := func(o huma.Operation) huma.Operation { o.DefaultStatus = http.StatusNoContent; return o }
	accepted := func(o huma.Operation) huma.Operation { o.DefaultStatus = http.StatusAccepted; return o }

	// Authentication: form-encoded (JSON accepted too), redirects for
	// browsers, JSON for Accept: application/json.
	a.formRoute(op("register", http.MethodPost, "/api/v1/auth/register", "Register an account", "auth"), auth.Public, a.register)
	a.formRoute(op("login", http.MethodPost, "/api/v1/auth/login", "Log in", "auth"), auth.Public, a.login)
	register(a, op("logout", http.MethodPost, "/api/v1/auth/logout", "Log out", "auth"), auth.Public, a.logout)

	// Users.
	register(a, op("get-me", http.MethodGet, "/api/v1/users/me", "The caller's account", "users"), auth.AppUse, a.getMe)
	register(a, op("update-me", http.MethodPatch, "/api/v1/users/me", "Update the caller's profile (a new email needs current_password and ends other sessions)", "users"), auth.Account, a.updateMe)
	register(a, noContent(op("change-password", http.MethodPost, "/api/v1/users/me/password", "Change password (ends other sessions)", "users")), auth.SessionOnly, a.changePassword)
	register(a, op("list-users", http.MethodGet, "/api/v1/users", "List accounts (admin)", "users"), auth.AdminOnly, a.listUsers)
	register(a, op("get-user", http.MethodGet, "/api/v1/users/{id}", "One account (admin)", "users"), auth.AdminOnly, a.getUser)
	register(a, op("update-user", http.MethodPatch, "/api/v1/users/{id}", "Enable, disable, promote or demote an account (admin)", "users"), auth.AdminOnly, a.updateUser)
	register(a, op("audit-log", http.MethodGet, "/api/v1/users/audit-log", "Admin accesses to other users' resources (admin)", "users"), auth.AdminOnly, a.auditLog)

	// API keys: managed with a session only.
	register(a, created(op("create-api-key", http.MethodPost, "/api/v1/user/api-keys", "Create an API key", "api-keys")), auth.SessionOnly, a.createAPIKey)
	register(a, op("list-api-keys", http.MethodGet, "/api/v1/user/api-keys", "List API keys", "api-keys"), auth.SessionOnly, a.listAPIKeys)
	register(a, noContent(op("revoke-api-key", http.MethodDelete, "/api/v1/user/api-keys/{key_id}", "Revoke an API key", "api-keys")), auth.SessionOnly, a.revokeAPIKey)

	// Apps and manifests: managed by the user, read with app:access too.
	register(a, op("list-apps", http.MethodGet, "/api/v1/apps", "List your apps, newest first", "apps"), auth.AppUse, a.listApps)
	register(a, created(op("create-app", http.MethodPost, "/api/v1/apps", "Create an app, optionally from manifest_data", "apps")), auth.Account, a.createApp)
	register(a, op("marketplace", http.MethodGet, "/api/v1/apps/marketplace", "Published apps of every user", "apps"), auth.AccountRead, a.marketplace)
	register(a, created(op("import-manifest", http.MethodPost, "/api/v1/apps/import-manifest", "Import an app from a manifest (JSON, or YAML with Content-Type: application/yaml)", "apps")), auth.User, a.importManifest)
	documentRawBody[apps.Manifest](a, http.MethodPost, "/api/v1/apps/import-manifest", "application/json", "application/yaml")
	register(a, op("get-app", http.MethodGet, "/api/v1/apps/{app_id}", "One app", "apps"), auth.AppUse, a.getApp)
	register(a, op("update-app", http.MethodPatch, "/api/v1/apps/{app_id}", "Rename, disable or publish an app", "apps"), auth.User, a.updateApp)
	register(a, noContent(op("delete-app", http.MethodDelete, "/api/v1/apps/{app_id}", "Delete an app and everything in it", "apps")), auth.User, a.deleteApp)
	register(a, created(op("install-app", http.MethodPost, "/api/v1/apps/{app_id}/install", "Copy a published app into your account", "apps")), auth.Account, a.installApp)
	register(a, op("export-manifest", http.MethodGet, "/api/v1/apps/{app_id}/manifest", "The app as a manifest (imports back to the same app)", "apps"), auth.AppUse, a.exportManifest)
	register(a, op("list-app-models", http.MethodGet, "/api/v1/apps/{app_id}/models", "Data models of an app", "apps"), auth.AppData, a.listAppModels)

	// Agents.
	register(a, op("list-agents", http.MethodGet, "/api/v1/agents", "Agents of your apps and the system agents", "agents"), auth.AppUse, a.listAgents)
	register(a, op("get-agent", http.MethodGet, "/api/v1/agents/{agent_id}", "One agent with its configuration", "agents"), auth.AppUse, a.getAgent)
	register(a, op("list-app-agents", http.MethodGet, "/api/v1/apps/{app_id}/agents", "Agents of an app", "agents"), auth.AppUse, a.listAppAgents)
	register(a, domainDecoded(created(op("create-app-agent", http.MethodPost, "/api/v1/apps/{app_id}/agents", "Add an agent to an app", "agents"))), auth.User, a.createAgent)
	documentRawBody[apps.AgentSpec](a, http.MethodPost, "/api/v1/apps/{app_id}/agents", "application/json")
	register(a, op("get-app-agent", http.MethodGet, "/api/v1/apps/{app_id}/agents/{agent_id}", "One agent of an app", "agents"), auth.AppUse, a.getAppAgent)
	register(a, domainDecoded(op("update-app-agent", http.MethodPatch, "/api/v1/apps/{app_id}/agents/{agent_id}", "Change an agent: any subset of its fields, and status", "agents")), auth.User, a.updateAgent)
	documentRawBody[AgentPatch](a, http.MethodPatch, "/api/v1/apps/{app_id}/agents/{agent_id}", "application/json")
	register(a, noContent(op("delete-app-agent", http.MethodDelete, "/api/v1/apps/{app_id}/agents/{agent_id}", "Delete an agent and its activations", "agents")), auth.User, a.deleteAgent)

	// Activations: using an app's agents is open to app:access keys.
	register(a, a.streams(created(op("activate-agent", http.MethodPost, "/api/v1/agents/{agent_id}/activate", "Activate an agent (simple form: status pending)", "activations"))), auth.AppUse, a.activateSimple)
	register(a, a.streams(created(op("activate-app-agent", http.MethodPost, "/api/v1/apps/{app_id}/agents/{agent_id}/activate", "Activate an agent of an app", "activations"))), auth.AppUse, a.activateInApp)
	register(a, a.streams(created(op("create-activation", http.MethodPost, "/api/v1/activations", "Create an activation", "activations"))), auth.AppUse, a.createActivation)
	register(a, op("list-activations", http.MethodGet, "/api/v1/activations", "Activation history", "activations"), auth.AppUse, a.listActivations)
	register(a, op("get-activation", http.MethodGet, "/api/v1/activations/{activation_id}", "One activation", "activations"), auth.AppUse, a.getActivation)
	a.streamRoute() // SSE: GET /api/v1/activations/{activation_id}/stream, auth.AppUse
	register(a, op("cancel-activation", http.MethodPost, "/api/v1/activations/{activation_id}/cancel", "Cancel a queued or running activation", "activations"), auth.AppUse, a.cancelActivation)
	register(a, op("activation-logs", http.MethodGet, "/api/v1/activations/{activation_id}/logs", "What a custom agent's run wrote (ctx.log, console.log, errors' stacks)", "activations"), auth.AppUse, a.activationLogs)
	register(a, op("activation-steps", http.MethodGet, "/api/v1/activations/{activation_id}/steps", "The steps of a run that calls tools: LLM answers, tool calls, waits", "activations"), auth.AppUse, a.activationSteps)
	register(a, accepted(op("answer-waitpoint", http.MethodPost, "/api/v1/activations/{activation_id}/waitpoints/{waitpoint_id}", "Answer what a waiting run waits for, once: decisions on its tool calls (approve, edit, reject) or its client tools' results", "activations")), auth.AppUse, a.answerWait)
	register(a, op("list-agent-activations", http.MethodGet, "/api/v1/agents/{agent_id}/activations", "Activations of an agent", "activations"), auth.AppUse, a.listAgentActivations)
	register(a, op("list-app-activations", http.MethodGet, "/api/v1/apps/{app_id}/activations", "Activations of an app", "activations"), auth.AppUse, a.listAppActivations)
	register(a, op("get-app-activation", http.MethodGet, "/api/v1/apps/{app_id}/agents/activations/{activation_id}", "One activation of an app", "activations"), auth.AppUse, a.getAppActivation)

	// Functions: managed like agents, read and run with app:access.
	register(a, op("list-functions", http.MethodGet, "/api/v1/functions", "Your functions (app_id filters), in creation order", "functions"), auth.AppUse, a.listFunctions)
	register(a, domainDecoded(created(op("create-function", http.MethodPost, "/api/v1/functions", "Add a function to an app", "functions"))), auth.User, a.createFunction)
	register(a, op("get-function", http.MethodGet, "/api/v1/functions/{function_id}", "One function", "functions"), auth.AppUse, a.getFunction)
	register(a, domainDecoded(op("update-function", http.MethodPatch, "/api/v1/functions/{function_id}", "Change any of a function's fields", "functions")), auth.User, a.updateFunction)
	register(a, noContent(op("delete-function", http.MethodDelete, "/api/v1/functions/{function_id}", "Delete a function and its executions", "functions")), auth.User, a.deleteFunction)
	register(a, op("execute-function", http.MethodPost, "/api/v1/functions/{function_id}/execute", "Run a function with an input checked against its input_schema; answers the execution", "functions"), auth.AppUse, a.executeFunction)
	register(a, op("execute-app-function", http.MethodPost, "/api/v1/apps/{app_id}/functions/{function_id}/execute", "Run one of the app's functions; answers the execution", "functions"), auth.AppUse, a.executeAppFunction)
	register(a, op("app-function-history", http.MethodGet, "/api/v1/apps/{app_id}/functions/history", "Executions of the app's functions, newest first", "functions"), auth.AppUse, a.appFunctionHistory)
	register(a, op("function-history", http.MethodGet, "/api/v1/apps/{app_id}/functions/{function_id}/history", "Executions of one function, newest first", "functions"), auth.AppUse, a.functionHistory)

	// Pipelines: managed like agents, read and run with app:access.
	register(a, op("list-pipelines", http.MethodGet, "/api/v1/pipelines", "Your pipelines (app_id filters), in creation order", "pipelines"), auth.AppUse, a.listPipelines)
	register(a, domainDecoded(created(op("create-pipeline", http.MethodPost, "/api/v1/pipelines", "Add a pipeline to an app", "pipelines"))), auth.User, a.createPipeline)
	register(a, op("list-pipeline-runs", http.MethodGet, "/api/v1/pipelines/runs", "Runs of a pipeline, newest first", "pipelines"), auth.AppUse, a.listRuns)
	register(a, op("get-pipeline-run", http.MethodGet, "/api/v1/pipelines/runs/{run_id}", "One run with its steps' states", "pipelines"), auth.AppUse, a.getRun)
	register(a, op("get-pipeline", http.MethodGet, "/api/v1/pipelines/{pipeline_id}", "One pipeline", "pipelines"), auth.AppUse, a.getPipeline)
	register(a, domainDecoded(op("update-pipeline", http.MethodPatch, "/api/v1/pipelines/{pipeline_id}", "Change any of a pipeline's fields", "pipelines")), auth.User, a.updatePipeline)
	register(a, noContent(op("delete-pipeline", http.MethodDelete, "/api/v1/pipelines/{pipeline_id}", "Delete a pipeline and its runs", "pipelines")), auth.User, a.deletePipeline)
	register(a, created(op("run-pipeline", http.MethodPost, "/api/v1/pipelines/{pipeline_id}/run", "Start a run: asynchronous, step by step; follow it at /pipelines/runs/{run_id} or by pipeline_run_* events", "pipelines")), auth.AppUse, a.runPipeline)

	// App data: models and records, open to app:access keys and to the
	// agent keys of the app's running custom agents; the data explorer's
	// paths answer the same.
	register(a, op("list-data-models", http.MethodGet, "/api/v1/data/{app_id}/models", "Data models of an app", "data"), auth.AppData, a.listDataModels)
	register(a, created(op("create-data-model", http.MethodPost, "/api/v1/data/{app_id}/models", "Create a data model", "data")), auth.AppData, a.createDataModel)
	register(a, op("get-data-model", http.MethodGet, "/api/v1/data/{app_id}/models/{slug}", "One data model", "data"), auth.AppData, a.getDataModel)
	register(a, op("update-data-model", http.MethodPatch, "/api/v1/data/{app_id}/models/{slug}", "Rename a model or replace its fields", "data"), auth.AppData, a.patchDataModel)
	register(a, noContent(op("delete-data-model", http.MethodDelete, "/api/v1/data/{app_id}/models/{slug}", "Delete a model and its records", "data")), auth.AppData, a.deleteDataModel)
	register(a, op("list-records", http.MethodGet, "/api/v1/data/{app_id}/{slug}", "Records of a model: filter[field]=value (any of the model's fields but json ones, compared as the field's type), sort=field or -field, limit, offset", "data"), auth.AppData, a.listRecords)
	register(a, created(op("create-record", http.MethodPost, "/api/v1/data/{app_id}/{slug}", "Create a record, checked against the model's fields", "data")), auth.AppData, a.createRecord)
	register(a, op("get-record", http.MethodGet, "/api/v1/data/{app_id}/{slug}/{item_id}", "One record", "data"), auth.AppData, a.getRecord)
	register(a, op("patch-record", http.MethodPatch, "/api/v1/data/{app_id}/{slug}/{item_id}", "Merge fields into a record (null removes one)", "data"), auth.AppData, a.patchRecord)
	register(a, op("put-record", http.MethodPut, "/api/v1/data/{app_id}/{slug}/{item_id}", "Replace a record's data", "data"), auth.AppData, a.putRecord)
	register(a, noContent(op("delete-record", http.MethodDelete, "/api/v1/data/{app_id}/{slug}/{item_id}", "Delete a record", "data")), auth.AppData, a.deleteRecord)
	register(a, op("explorer-models", http.MethodGet, "/api/apps/{appId}/models", "Data explorer: the app's models", "data"), auth.AppData, a.explorerModels)
	register(a, op("explorer-fields", http.MethodGet, "/api/apps/{appId}/{modelSlug}/fields", "Data explorer: a model's fields", "data"), auth.AppData, a.explorerFields)
	register(a, op("explorer-records", http.MethodGet, "/api/apps/{appId}/{modelSlug}", "Data explorer: a model's records (the filters, order and pages of list-records)", "data"), auth.AppData, a.explorerRecords)

	// The credential service: a user's OAuth connections to the app's
	// authenticators ({provider} is an authenticator's name), open to
	// app:access keys and to the agent keys of the app's running custom
	// agents. Tokens reach only agent keys and admin or app:access keys.
	register(a, op("list-credentials", http.MethodGet, "/api/v1/credentials", "Your OAuth connections (app_id filters), with their health", "credentials"), auth.AppData, a.listCredentials)
	register(a, op("get-credentials", http.MethodGet, "/api/v1/credentials/{app_id}/{provider}", "A connection's credentials, refreshed on the spot when expired", "credentials"), auth.AppData, a.getCredentials)
	register(a, op("revoke-credentials", http.MethodDelete, "/api/v1/credentials/{app_id}/{provider}", "Disconnect: revoke at the provider (when it can) and forget the tokens", "credentials"), auth.AppData, a.revokeCredentials)
	register(a, op("credentials-connected", http.MethodGet, "/api/v1/credentials/{app_id}/{provider}/connected", "Whether the user is connected to the provider", "credentials"), auth.AppData, a.isConnected)
	register(a, op("refresh-credentials", http.MethodPost, "/api/v1/credentials/{app_id}/{provider}/refresh", "Refresh the connection's tokens now", "credentials"), auth.AppData, a.refreshCredentials)
	register(a, op("validate-scopes", http.MethodPost, "/api/v1/credentials/{app_id}/{provider}/validate-scopes", "Whether the connection holds the required scopes, and which it lacks", "credentials"), auth.AppData, a.validateScopes)
	register(a, op("token-info", http.MethodGet, "/api/v1/credentials/{app_id}/{provider}/token-info", "About the connection's token (never the token)", "credentials"), auth.AppData, a.tokenInfo)
	register(a, op("user-info", http.MethodGet, "/api/v1/credentials/{app_id}/{provider}/user-info", "The connected account, as the provider describes it", "credentials"), auth.AppData, a.userInfo)
	register(a, op("authorize-credentials", http.MethodGet, "/api/v1/credentials/{app_id}/{provider}/authorize", "Start connecting: redirect the browser to the provider", "credentials"), auth.AppData, a.authorize)
	register(a, op("credentials-auth-url", http.MethodGet, "/api/v1/credentials/{app_id}/{provider}/auth-url", "Start connecting: the provider's authorization URL", "credentials"), auth.AppData, a.authURL)
	register(a, op("oauth-callback", http.MethodGet, "/api/v1/oauth/callback", "The provider sends the browser back here: the connection is stored and the browser sent to return_to", "credentials"), auth.Public, a.oauthCallback)

	// Workers.
	register(a, op("worker-status", http.MethodGet, "/api/v1/worker/status", "Worker processes, queue depth, throughput", "worker"), auth.User, a.workerStatus)
	register(a, op("worker-pause", http.MethodPost, "/api/v1/worker/pause", "Pause the activation queue (admin)", "worker"), auth.AdminOnly, a.pauseWorker)
	register(a, op("worker-resume", http.MethodPost, "/api/v1/worker/resume", "Resume the activation queue (admin)", "worker"), auth.AdminOnly, a.resumeWorker)
	register(a, op("worker-jobs", http.MethodGet, "/api/v1/worker/jobs", "Queue jobs (admin)", "worker"), auth.AdminOnly, a.workerJobs)

	// Webhooks: the app's signing secret (managing the app: not app:access)
	// and the delivery attempts of an activation.
	register(a, op("get-webhook-secret", http.MethodGet, "/api/v1/apps/{app_id}/webhook-secret", "The app's webhook signing secret (made on first use)", "webhooks"), auth.User, a.getWebhookSecret)
	register(a, op("rotate-webhook-secret", http.MethodPost, "/api/v1/apps/{app_id}/webhook-secret", "Replace the app's webhook signing secret", "webhooks"), auth.User, a.rotateWebhookSecret)
	register(a, deliveriesDoc(op("list-webhook-deliveries", http.MethodGet, "/api/v1/activations/{activation_id}/deliveries", "Webhook delivery attempts of an activation, oldest first", "webhooks")), auth.AppUse, a.listDeliveries)

	// LLM providers: the system ones and the caller's own; what an app may
	// use is readable with app:access.
	register(a, op("list-llm-providers", http.MethodGet, "/api/v1/llm-providers", "System providers first, then yours", "llm-providers"), auth.Account, a.listLLMProviders)
	register(a, created(op("create-llm-provider", http.MethodPost, "/api/v1/llm-providers", "Add an LLM provider (its api_key is stored encrypted)", "llm-providers")), auth.Account, a.createLLMProvider)
	register(a, op("get-llm-provider", http.MethodGet, "/api/v1/llm-providers/{id}", "One LLM provider", "llm-providers"), auth.Account, a.getLLMProvider)
	register(a, op("update-llm-provider", http.MethodPatch, "/api/v1/llm-providers/{id}", "Change an LLM provider (not a system one)", "llm-providers"), auth.Account, a.updateLLMProvider)
	register(a, noContent(op("delete-llm-provider", http.MethodDelete, "/api/v1/llm-providers/{id}", "Delete an LLM provider (not a system one)", "llm-providers")), auth.Account, a.deleteLLMProvider)
	register(a, op("test-llm-provider", http.MethodPost, "/api/v1/llm-providers/{id}/test", "Make a tiny completion with the provider's default model", "llm-providers"), auth.Account, a.testLLMProvider)
	register(a, op("list-app-model-providers", http.MethodGet, "/api/v1/apps/{app_id}/model-providers", "LLM providers the app's agents may use", "llm-providers"), auth.AppUse, a.appModelProviders)

	// Usage and budgets: a report is readable with app:access (a key
	// bound to an app sees that app's); budgets are the account's.
	register(a, op("get-usage", http.MethodGet, "/api/v1/usage", "Your LLM calls' tokens and cost, summed by day, app, agent, model or API key", "usage"), auth.AppUse, a.getUsage)
	register(a, op("list-budgets", http.MethodGet, "/api/v1/budgets", "Your budgets, oldest first, with what is spent", "usage"), auth.Account, a.listBudgets)
	register(a, created(op("create-budget", http.MethodPost, "/api/v1/budgets", "Limit the cost of your usage, an app's or an API key's per UTC day or month", "usage")), auth.Account, a.createBudget)
	register(a, op("get-budget", http.MethodGet, "/api/v1/budgets/{budget_id}", "One budget", "usage"), auth.Account, a.getBudget)
	register(a, op("update-budget", http.MethodPatch, "/api/v1/budgets/{budget_id}", "Change a budget's period or limit", "usage"), auth.Account, a.updateBudget)
	register(a, noContent(op("delete-budget", http.MethodDelete, "/api/v1/budgets/{budget_id}", "Delete a budget", "usage")), auth.Account, a.deleteBudget)

	// OAuth authenticators: managed like agents, read with app:access. The
	// service-provider routes are the same things seen from the app.
	register(a, domainDecoded(created(op("create-authenticator", http.MethodPost, "/api/v1/oauth/authenticators/{app_id}", "Register an OAuth 2.0 provider for an app", "authenticators"))), auth.User, a.createAuthenticator)
	documentRawBody[AuthenticatorCreate](a, http.MethodPost, "/api/v1/oauth/authenticators/{app_id}", "application/json")
	register(a, op("list-authenticators", http.MethodGet, "/api/v1/oauth/authenticators", "Authenticators of an app, in creation order", "authenticators"), auth.AppUse, a.listAuthenticators)
	register(a, op("get-authenticator", http.MethodGet, "/api/v1/oauth/authenticators/{authenticator_id}", "One authenticator", "authenticators"), auth.AppUse, a.getAuthenticator)
	register(a, domainDecoded(op("update-authenticator", http.MethodPatch, "/api/v1/oauth/authenticators/{authenticator_id}", "Change any of an authenticator's fields, is_active, or its client secret", "authenticators")), auth.User, a.updateAuthenticator)
	documentRawBody[AuthenticatorPatch](a, http.MethodPatch, "/api/v1/oauth/authenticators/{authenticator_id}", "application/json")
	register(a, noContent(op("delete-authenticator", http.MethodDelete, "/api/v1/oauth/authenticators/{authenticator_id}", "Delete an authenticator, its connections revoked", "authenticators")), auth.User, a.deleteAuthenticator)
	register(a, op("list-service-providers", http.MethodGet, "/api/v1/apps/{app_id}/service-providers", "The app's authenticators (as list-authenticators)", "authenticators"), auth.AppUse, a.listServiceProviders)
	register(a, domainDecoded(created(op("add-service-provider", http.MethodPost, "/api/v1/apps/{app_id}/service-providers", "Register an OAuth 2.0 provider for the app (as create-authenticator)", "authenticators"))), auth.User, a.createAuthenticator)
	documentRawBody[AuthenticatorCreate](a, http.MethodPost, "/api/v1/apps/{app_id}/service-providers", "application/json")
	// MCP servers: the app's remote MCP servers, whose tools its LLM agents
	// call; managed like authenticators, read with app:access.
	register(a, op("list-mcp-servers", http.MethodGet, "/api/v1/apps/{app_id}/mcp-servers", "The app's remote MCP servers, in creation order", "mcp-servers"), auth.AppUse, a.listMCPServers)
	register(a, domainDecoded(created(op("create-mcp-server", http.MethodPost, "/api/v1/apps/{app_id}/mcp-servers", "Declare a remote MCP server whose tools the app's agents may call", "mcp-servers"))), auth.User, a.createMCPServer)
	documentRawBody[apps.MCPServerSpec](a, http.MethodPost, "/api/v1/apps/{app_id}/mcp-servers", "application/json")
	register(a, op("get-mcp-server", http.MethodGet, "/api/v1/apps/{app_id}/mcp-servers/{server_id}", "One MCP server of the app", "mcp-servers"), auth.AppUse, a.getMCPServer)
	register(a, domainDecoded(op("update-mcp-server", http.MethodPatch, "/api/v1/apps/{app_id}/mcp-servers/{server_id}", "Change any of an MCP server's fields", "mcp-servers")), auth.User, a.updateMCPServer)
	documentRawBody[MCPServerPatch](a, http.MethodPatch, "/api/v1/apps/{app_id}/mcp-servers/{server_id}", "application/json")
	register(a, noContent(op("delete-mcp-server", http.MethodDelete, "/api/v1/apps/{app_id}/mcp-servers/{server_id}", "Delete an MCP server no agent's tools name (409 otherwise)", "mcp-servers")), auth.User, a.deleteMCPServer)

	// Events: a WebSocket, served by plain net/http and documented by hand;
	// its caller is the router's identity (cookie, bearer or ?token=, see
	// queryTokenRoutes), its rule applied in eventsSocket.
	a.mux.HandleFunc("GET /api/v1/ws", a.eventsSocket)
	a.documentEventsSocket()

	// MCP: Streamable HTTP (JSON-RPC), served by plain net/http and
	// documented by hand; the caller's rule is applied in mcpEndpoint.
	a.mux.HandleFunc("POST /api/v1/apps/{app_id}/mcp", a.mcpEndpoint)
	a.mux.HandleFunc("POST /api/v1/mcp", a.mcpEndpoint)
	a.documentMCP()

	// The OpenAI-compatible endpoint: plain handlers answering OpenAI's
	// shapes (openai.go), with activate's rule.
	a.openaiRoutes()

	// Operations: no authentication.
	register(a, unlimited(op("version", http.MethodGet, "/api/v1/version", "Platform and API version", "operations")), auth.Public, a.version)
	register(a, unlimited(op("healthz", http.MethodGet, "/healthz", "Liveness", "operations")), auth.Public, a.healthz)
	register(a, unlimited(op("readyz", http.MethodGet, "/readyz", "Readiness: database reachable and migrated", "operations")), auth.Public, a.readyz)
	// A scraper polls from one address: like the probes, never limited.
	a.mux.Handle("GET /metrics", a.metrics.Handler())
	a.unlimited["GET /metrics"] = true
	a.docsRoutes()
}
