package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// completeWithRoles calls ctx.llm.complete with a system, a user, an
// assistant and a user message on input.provider, then with a role no
// provider knows, and answers the text and what that second call threw.
const completeWithRoles = `async function run(input, ctx) {
	const r = await ctx.llm.complete({provider_id: input.provider, model: "m", messages: [
		{role: "system", content: "Answer in French."},
		{role: "user", content: "Hi"},
		{role: "assistant", content: "Bonjour"},
		{content: "How are you?"}]}); // no role: the user's, as always
	let bad;
	try {
		await ctx.llm.complete({provider_id: input.provider, messages: [{role: "user", content: "x"}, {role: "robot", content: "y"}]});
	} catch (e) { bad = e.name + ": " + e.message; }
	return {text: r.text, bad};
}`

// TestJavaScriptCompleteSendsRolesAsGiven: ctx.llm.complete's messages
// reach the provider with their roles, from an agent and from a function:
// the system message as OpenAI's system message, and in Anthropic's system
// parameter; a message without a role is the user's. A role that is none
// of system, user, assistant is a ValidationError naming it, and no call
// is made.
func TestJavaScriptCompleteSendsRolesAsGiven(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("roles@example.com")
		ag := e.jsAgent(tok, completeWithRoles, 30)
		turns := []llm.Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Bonjour"}, {Role: "user", Content: "How are you?"}}
		const bad = `ValidationError: messages[1].role must be "system", "user" or "assistant", not "robot"`

		for _, p := range []struct {
			typ  string
			fake *llmtest.Server
		}{{llm.TypeOpenAICompatible, llmtest.NewOpenAI(t)}, {llm.TypeAnthropic, llmtest.NewAnthropic(t)}} {
			pid := e.do("POST", providersPath, map[string]any{"name": "roles-" + p.typ, "provider_type": p.typ,
				"base_url": p.fake.URL, "models": []string{"m"}}, bearer(tok)).expect(t, 201).str("id")
			input := map[string]any{"provider": pid}

			done := e.await(tok, e.activateJS(tok, ag, input))
			require.Equal(t, "completed", done.str("status"), done.str("error"))
			require.Equal(t, map[string]any{"text": "reply to: How are you?", "bad": bad}, done.JSON["output_data"], p.typ)
			fn := e.runFunction(tok, ag.appID, completeWithRoles, input)
			require.Equal(t, "completed", fn.str("status"), fn.str("error"))
			require.Equal(t, map[string]any{"text": "reply to: How are you?", "bad": bad}, fn.JSON["output"], p.typ)

			reqs := p.fake.Requests()
			require.Len(t, reqs, 2, "%s: the invalid role is refused before any call", p.typ)
			for _, r := range reqs {
				require.Equal(t, append([]llm.Message{{Role: "system", Content: "Answer in French."}}, turns...), r.Sent, p.typ)
				require.Equal(t, "Answer in French.", r.System, p.typ)
				require.Equal(t, turns, r.Messages, "%s: the system message is not a turn", p.typ)
			}
		}
	})
}
