// The README's "Try it" and its example app, written the way a client
// developer writes them: types generated from the served OpenAPI document
// by openapi-typescript (./schema.d.ts), calls made through openapi-fetch,
// the whole checked by tsc --strict. internal/clienttest compiles and runs
// it against a live platform at AP_URL.
//
// Its rule: no type assertion, no any, no non-null assertion, no ts-comment
// directive (the test refuses the file otherwise). Wherever the document
// types a call wrongly, this program fails to compile, and that is a defect
// of the document. Free-form values (an agent's output, a record's data) are
// unknown and narrowed by checking them, which is what their schemas promise.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";
// examples/support-desk.json pasted into a module: the test writes it
// ("export const manifest = <the file> satisfies Manifest"), so that tsc
// checks the example against the document's Manifest, enums included (a
// JSON import would widen every string and check nothing).
import { manifest } from "./support-desk.js";

// Node's process, declared here so that no @types package is needed.
declare const process: { env: Record<string, string | undefined> };

type Schemas = components["schemas"];

const baseUrl = process.env.AP_URL;
if (!baseUrl) throw new Error("AP_URL is not set");

// fail reports an unexpected answer with its status and body.
function fail(what: string, response: Response, body: unknown): never {
  throw new Error(`${what}: ${response.status} ${JSON.stringify(body)}`);
}

// ok returns an answer's typed body when its status is the one expected.
function ok<T>(what: string, status: number, r: { data?: T; error?: unknown; response: Response }): T {
  if (r.response.status !== status || r.data === undefined) fail(what, r.response, r.error);
  return r.data;
}

function check(cond: boolean, what: string, got: unknown): void {
  if (!cond) throw new Error(`${what}: got ${JSON.stringify(got)}`);
}

// field reads one property of a free-form JSON value.
function field(v: unknown, name: string): unknown {
  if (typeof v === "object" && v !== null && name in v) {
    return Object.entries(v).find(([k]) => k === name)?.[1];
  }
  return undefined;
}

async function poll<T>(what: string, get: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const v = await get();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what} did not end: ${JSON.stringify(v)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// A client of the JSON answers: an activation's 201 is also documented as
// text/event-stream (with Accept: text/event-stream), which this program
// does not ask for, so its answers are typed by their JSON schemas alone.
const client = (token?: string) =>
  createClient<paths, "application/json">({ baseUrl, headers: token ? { Authorization: `Bearer ${token}` } : {} });

const anonymous = client();
const json = { Accept: "application/json" };

// 1. Register (the first account is the admin).
const email = "ada@example.com";
const password = "correct-horse";
const registered: Schemas["User"] = ok(
  "register",
  201,
  await anonymous.POST("/api/v1/auth/register", {
    params: { header: json },
    body: { email, password, confirm_password: password, first_name: "Ada", last_name: "Lovelace" },
  }),
);
check(registered.email === email && registered.is_admin, "register", registered);

// 2. Log in: the access_token is a session token.
const login = ok(
  "login",
  200,
  await anonymous.POST("/api/v1/auth/login", { params: { header: json }, body: { email, password } }),
);
check(login.access_token.startsWith("st_") && login.token_type === "bearer", "login", login);

// 3. An API key, created with the session.
const session = client(login.access_token);
const created = ok(
  "create api key",
  201,
  await session.POST("/api/v1/user/api-keys", { body: { name: "my laptop", scopes: ["read:all", "write:all"] } }),
);
check(created.key.startsWith("ak_") && created.app_id === null, "create api key", created);

// 4. The API, called with the key.
const api = client(created.key);
const me = ok("users/me", 200, await api.GET("/api/v1/users/me"));
check(me.id === registered.id && me.first_name === "Ada" && me.is_active, "users/me", me);

// The example app: the manifest file itself is the request body's type.
const imported = ok("import", 201, await api.POST("/api/v1/apps/import-manifest", { body: manifest }));
check(imported.created.agents === 3 && imported.created.functions === 3 && imported.created.pipelines === 1 && !imported.upgraded, "import", imported);
const appId = imported.app_id;

const agents = ok(
  "list agents",
  200,
  await api.GET("/api/v1/apps/{app_id}/agents", { params: { path: { app_id: appId } } }),
);
const agentId = (name: string): string => {
  const agent = agents.agents.find((a) => a.name === name);
  if (!agent) throw new Error(`no agent ${name} in ${JSON.stringify(agents)}`);
  return agent.agent_id;
};

// Activate the LLM agent and wait for its answer (Prefer: wait=N).
const triage = ok(
  "activate triage",
  201,
  await api.POST("/api/v1/agents/{agent_id}/activate", {
    params: { path: { agent_id: agentId("triage") }, header: { Prefer: "wait=20" } },
    body: { input_data: { prompt: "My invoice is wrong" }, context: { chat_id: "c1" } },
  }),
);
check(triage.status === "completed", "activate triage", triage);
const activation: Schemas["Activation"] = ok(
  "get activation",
  200,
  await api.GET("/api/v1/activations/{activation_id}", { params: { path: { activation_id: triage.activation_id } } }),
);
const answer = field(activation.output_data, "response");
check(
  activation.status === "completed" && typeof answer === "string" && answer.includes("My invoice is wrong"),
  "triage's output",
  activation,
);
check(activation.context.chat_id === "c1" && activation.app_id === appId, "triage's context", activation);

// The custom agent records a ticket in the app's data; poll it to its end.
const routed = ok(
  "activate router",
  201,
  await api.POST("/api/v1/agents/{agent_id}/activate", {
    params: { path: { agent_id: agentId("escalation-router") } },
    body: {
      input_data: {
        subject: "Refund for a double charge",
        body: "I was charged twice this month.",
        customer_email: "grace@example.com",
        priority: "high",
      },
    },
  }),
);
const route = await poll(
  "router activation",
  async () =>
    ok(
      "get activation",
      200,
      await api.GET("/api/v1/activations/{activation_id}", { params: { path: { activation_id: routed.activation_id } } }),
    ),
  (a) => a.status === "completed" || a.status === "failed",
);
check(route.status === "completed" && field(route.output_data, "team") === "billing", "router's output", route);

// The ticket it wrote, found by a filter on its priority (filter[priority]=high).
const records = (priority: string) =>
  api.GET("/api/v1/data/{app_id}/{slug}", {
    params: { path: { app_id: appId, slug: "tickets" }, query: { filter: { priority }, limit: 10 } },
  });
const high = ok("records, high", 200, await records("high"));
check(high.total_count === 1 && high.items.length === 1, "records, high", high);
const ticket: Schemas["DataRecord"] = high.items[0];
check(
  ticket.item_id === field(route.output_data, "item_id") && ticket.data.subject === "Refund for a double charge",
  "the ticket",
  ticket,
);
const low = ok("records, low", 200, await records("low"));
check(low.total_count === 0 && low.items.length === 0 && !low.has_more, "records, low", low);

// A function created over the API, and a pipeline whose step names it by id.
const fn = ok(
  "create function",
  201,
  await api.POST("/api/v1/functions", {
    body: {
      app_id: appId,
      name: "shout",
      description: "Upper-cases a text.",
      code: "async function run(input) {\n  return {text: input.text.toUpperCase()};\n}\n",
      input_schema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
      timeout_seconds: 5,
    },
  }),
);
const executed = ok(
  "execute function",
  200,
  await api.POST("/api/v1/functions/{function_id}/execute", {
    params: { path: { function_id: fn.function_id } },
    body: { input: { text: "hi" } },
  }),
);
check(executed.status === "completed" && field(executed.output, "text") === "HI", "execute function", executed);

const pipeline = ok(
  "create pipeline",
  201,
  await api.POST("/api/v1/pipelines", {
    body: {
      app_id: appId,
      name: "shout-twice",
      steps: [
        { id: "first", type: "function", ref: fn.function_id, input: "{{input}}" },
        { id: "second", type: "function", ref: fn.function_id, input: { text: "{{steps.first.output.text}}!" } },
      ],
    },
  }),
);
check(pipeline.steps.length === 2 && pipeline.steps[0].ref === fn.function_id, "create pipeline", pipeline);
const started = ok(
  "run pipeline",
  201,
  await api.POST("/api/v1/pipelines/{pipeline_id}/run", {
    params: { path: { pipeline_id: pipeline.pipeline_id } },
    body: { input: { text: "hello" } },
  }),
);
const run: Schemas["Run"] = await poll(
  "pipeline run",
  async () =>
    ok(
      "get run",
      200,
      await api.GET("/api/v1/pipelines/runs/{run_id}", { params: { path: { run_id: started.run_id } } }),
    ),
  (r) => r.status === "completed" || r.status === "failed",
);
check(run.status === "completed" && field(run.output, "text") === "HELLO!", "pipeline run", run);

// A paged list: the app's two pipelines, one a page.
const names: string[] = [];
for (let offset = 0; ; ) {
  const page = ok(
    "list pipelines",
    200,
    await api.GET("/api/v1/pipelines", { params: { query: { app_id: appId, limit: 1, offset } } }),
  );
  check(page.total_count === 2 && page.pipelines.length === 1, "list pipelines", page);
  names.push(...page.pipelines.map((p) => p.name));
  offset += page.pipelines.length;
  if (!page.has_more) break;
}
check(names.sort().join(",") === "intake,shout-twice", "pipelines", names);

console.log("readme flow ok");
