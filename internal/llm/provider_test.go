package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
)

func ptr[T any](v T) *T { return &v }

// history is a conversation with a system prompt, earlier turns and a new
// prompt: every part must reach the provider.
func history(onDelta func(string)) llm.Request {
	return llm.Request{
		Model: "m-1", System: "You are terse.", Temperature: ptr(0.3), MaxTokens: 123,
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "first question"},
			{Role: llm.RoleAssistant, Content: "first answer"},
			{Role: llm.RoleUser, Content: "second question"},
		},
		OnDelta: onDelta,
	}
}

// fake is a provider type with its test server.
type fake struct {
	typ    string
	server func(testing.TB) *llmtest.Server
	auth   string // how the key arrives
}

var fakes = []fake{
	{llm.TypeOpenAI, llmtest.NewOpenAI, "Bearer sk-test"},
	{llm.TypeOpenAICompatible, llmtest.NewOpenAI, "Bearer sk-test"},
	{llm.TypeAnthropic, llmtest.NewAnthropic, "sk-test"},
}

func client(t *testing.T, f fake, s *llmtest.Server) llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{ID: "prov-1", Type: f.typ, BaseURL: s.URL, APIKey: "sk-test"})
	require.NoError(t, err)
	return c
}

func TestProvidersSendEverythingAndAnswer(t *testing.T) {
	t.Parallel()
	for _, f := range fakes {
		for _, streaming := range []bool{false, true} {
			name := f.typ
			if streaming {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := f.server(t)
				s.SetReply("alpha beta gamma delta")
				var deltas []string
				var onDelta func(string)
				if streaming {
					onDelta = func(d string) { deltas = append(deltas, d) }
				}
				res, err := client(t, f, s).Complete(t.Context(), history(onDelta))
				require.NoError(t, err)
				require.Equal(t, "alpha beta gamma delta", res.Text)
				require.Equal(t, "m-1", res.Model)
				require.Equal(t, "prov-1", res.Provider)
				require.Equal(t, "stop", res.FinishReason)
				// The fake counts words: 9 prompt words (system included), 4 reply words.
				require.Equal(t, llm.Usage{PromptTokens: 9, CompletionTokens: 4, TotalTokens: 13}, res.Usage)
				if streaming {
					require.Equal(t, []string{"alpha ", "beta ", "gamma ", "delta"}, deltas)
				}

				reqs := s.Requests()
				require.Len(t, reqs, 1)
				r := reqs[0]
				require.Equal(t, "m-1", r.Model)
				require.NotNil(t, r.Temperature)
				require.InDelta(t, 0.3, *r.Temperature, 1e-9)
				require.Equal(t, 123, r.MaxTokens)
				require.Equal(t, "You are terse.", r.System)
				require.Equal(t, history(nil).Messages, r.Messages)
				require.Equal(t, streaming, r.Stream)
				require.Equal(t, f.auth, r.Auth)
			})
		}
	}
}

// TestProvidersReportCacheTokens: cache tokens come back where providers
// report them, and input counts them as the OTel GenAI conventions do:
// OpenAI's prompt_tokens hold the cached ones already, Anthropic's
// input_tokens do not and get its cache reads and writes added.
func TestProvidersReportCacheTokens(t *testing.T) {
	t.Parallel()
	for _, f := range fakes {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprint(f.typ, streaming), func(t *testing.T) {
				t.Parallel()
				s := f.server(t)
				s.Queue(llmtest.Reply{Text: "alpha beta gamma delta", CacheRead: 100, CacheWrite: 20})
				req := history(nil)
				if streaming {
					req.OnDelta = func(string) {}
				}
				res, err := client(t, f, s).Complete(t.Context(), req)
				require.NoError(t, err)
				want := llm.Usage{PromptTokens: 9 + 100, CompletionTokens: 4, TotalTokens: 113, CacheReadTokens: 100}
				if f.typ == llm.TypeAnthropic {
					want = llm.Usage{PromptTokens: 9 + 100 + 20, CompletionTokens: 4, TotalTokens: 133, CacheReadTokens: 100, CacheWriteTokens: 20}
				}
				require.Equal(t, want, res.Usage)
			})
		}
	}
}

// TestProvidersSendRolesAsGiven: a system message reaches OpenAI as a
// system message in its place, and Anthropic in its system parameter,
// after the request's system prompt; the other turns keep their roles.
func TestProvidersSendRolesAsGiven(t *testing.T) {
	t.Parallel()
	for _, f := range fakes {
		t.Run(f.typ, func(t *testing.T) {
			t.Parallel()
			s := f.server(t)
			_, err := client(t, f, s).Complete(t.Context(), llm.Request{Model: "m", System: "You are terse.",
				Messages: []llm.Message{
					{Role: llm.RoleSystem, Content: "Answer in French."},
					{Role: llm.RoleUser, Content: "Hi"},
					{Role: llm.RoleAssistant, Content: "Bonjour"},
					{Role: llm.RoleUser, Content: "How are you?"},
				}})
			require.NoError(t, err)
			require.Equal(t, []llm.Message{{Role: llm.RoleSystem, Content: "You are terse."}, {Role: llm.RoleSystem, Content: "Answer in French."},
				{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Bonjour"}, {Role: "user", Content: "How are you?"}},
				s.Requests()[0].Sent)
		})
	}
}

func TestProvidersOmitUnsetOptions(t *testing.T) {
	t.Parallel()
	for _, f := range fakes {
		t.Run(f.typ, func(t *testing.T) {
			t.Parallel()
			s := f.server(t)
			res, err := client(t, f, s).Complete(t.Context(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			require.NoError(t, err)
			require.Equal(t, "reply to: hi", res.Text)
			r := s.Requests()[0]
			require.Nil(t, r.Temperature)
			require.Empty(t, r.System)
			require.Equal(t, []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, r.Sent, "no empty system prompt")
			if f.typ == llm.TypeAnthropic {
				require.Positive(t, r.MaxTokens, "the Messages API requires max_tokens")
			} else {
				require.Zero(t, r.MaxTokens)
			}
		})
	}
}

func TestProviderErrorsAreClassified(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status    int
		transient bool
	}{
		{http.StatusBadRequest, false},
		{http.StatusUnauthorized, false},
		{http.StatusNotFound, false},
		{http.StatusTooManyRequests, true},
		{http.StatusInternalServerError, true},
		{http.StatusServiceUnavailable, true},
		{529, true},
	}
	for _, f := range fakes {
		t.Run(f.typ, func(t *testing.T) {
			t.Parallel()
			s := f.server(t)
			c := client(t, f, s)
			for _, tc := range cases {
				for _, streaming := range []bool{false, true} {
					s.FailNext(1, tc.status)
					req := history(nil)
					if streaming {
						req.OnDelta = func(string) { t.Error("delta from a failed call") }
					}
					_, err := c.Complete(t.Context(), req)
					var le *llm.Error
					require.ErrorAs(t, err, &le, "status %d", tc.status)
					require.Equal(t, "prov-1", le.Provider)
					require.Equal(t, tc.status, le.Status)
					require.Equal(t, tc.transient, le.Transient, "status %d", tc.status)
					require.Contains(t, le.Message, "(llmtest)", "the provider's own message is kept")
					require.Contains(t, err.Error(), "prov-1")
				}
			}
			// One call per attempt: the SDKs' own retries are off.
			require.Equal(t, 2*len(cases), s.Calls())
		})
	}
}

func TestConnectionFailureIsTransient(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	for _, typ := range []string{llm.TypeOpenAICompatible, llm.TypeAnthropic} {
		c, err := llm.New(llm.Config{ID: "p", Type: typ, BaseURL: strings.Replace(url, "http://", "http://tok3n:pa55@", 1) + "/?key=s3cret"})
		require.NoError(t, err)
		_, err = c.Complete(t.Context(), history(nil))
		var le *llm.Error
		require.ErrorAs(t, err, &le)
		require.True(t, le.Transient, typ)
		require.Zero(t, le.Status)
		require.NotContains(t, err.Error(), "s3cret", "the URL's query is neither shown nor logged")
		require.NotContains(t, err.Error(), "tok3n", "nor its userinfo")
	}
}

func TestCancelInterruptsTheCall(t *testing.T) {
	t.Parallel()
	for _, f := range fakes {
		for _, streaming := range []bool{false, true} {
			t.Run(f.typ+map[bool]string{true: "/stream"}[streaming], func(t *testing.T) {
				t.Parallel()
				s := f.server(t)
				release := s.Block()
				defer release()
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				req := history(nil)
				if streaming {
					req.OnDelta = func(string) {}
				}
				go func() {
					_, err := client(t, f, s).Complete(ctx, req)
					done <- err
				}()
				s.WaitCalls(t, 1)
				cancel()
				select {
				case err := <-done:
					require.ErrorIs(t, err, context.Canceled)
					var le *llm.Error
					require.ErrorAs(t, err, &le)
					require.False(t, le.Transient, "a cancelled call is not retried")
				case <-time.After(10 * time.Second):
					t.Fatal("cancel did not interrupt the call")
				}
			})
		}
	}
}

func TestDeadlineIsTransient(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	s.SetDelay(time.Hour)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := client(t, fakes[0], s).Complete(ctx, history(nil))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	require.True(t, le.Transient)
	require.Contains(t, le.Message, "timed out")
}

func TestEcho(t *testing.T) {
	t.Parallel()
	var deltas []string
	req := history(func(d string) { deltas = append(deltas, d) })
	res, err := llm.Echo("echo").Complete(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, &llm.Response{Text: "echo: second question", Model: "echo", Provider: "echo", FinishReason: "stop",
		Usage: llm.Usage{PromptTokens: 9, CompletionTokens: 3, TotalTokens: 12}}, res)
	require.Equal(t, []string{"echo: ", "second ", "question"}, deltas)
	require.Equal(t, res.Text, strings.Join(deltas, ""))

	req.OnDelta = nil
	again, err := llm.Echo("echo").Complete(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, res, again, "deterministic")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = llm.Echo("echo").Complete(ctx, req)
	require.True(t, errors.Is(err, context.Canceled))
}

func TestFragments(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"a ", "b  ", "c"}, llm.Fragments("a b  c"))
	require.Equal(t, []string{"solo"}, llm.Fragments("solo"))
	require.Empty(t, llm.Fragments(""))
}

func TestUnknownType(t *testing.T) {
	t.Parallel()
	_, err := llm.New(llm.Config{ID: "x", Type: "gemini"})
	require.Error(t, err)
}

// TestCanCallTools: every provider type calls tools; an unknown one does not.
func TestCanCallTools(t *testing.T) {
	t.Parallel()
	for _, typ := range llm.Types {
		require.True(t, llm.CanCallTools(typ), typ)
	}
	require.False(t, llm.CanCallTools("gemini"))
}
