package llm_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
)

// named builds the client of a user provider whose id is a UUID and whose
// name is what errors must show.
func named(t *testing.T, f fake, url string) llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{ID: "0197a8c0-0000-7000-8000-000000000001", Name: "My Local Llama", Type: f.typ, BaseURL: url, APIKey: "sk-test"})
	require.NoError(t, err)
	return c
}

// sized are the wire formats the size tests run on: openai_compatible
// reads answers exactly like openai.
var sized = []fake{fakes[0], fakes[2]}

func TestOversizedAnswersFail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(s *llmtest.Server)
	}{
		// Many deltas (or one JSON body) adding up to more than 4 MiB.
		{"many-parts", func(s *llmtest.Server) {
			s.SetReplySize(llm.MaxResponseBytes + 1)
		}},
		// One word: a single SSE event over 4 MiB.
		{"one-part", func(s *llmtest.Server) {
			s.SetReply(strings.Repeat("y", llm.MaxResponseBytes+1))
		}},
	}
	for _, f := range sized {
		for _, streaming := range []bool{false, true} {
			for _, tc := range cases {
				t.Run(f.typ+map[bool]string{true: "/stream"}[streaming]+"/"+tc.name, func(t *testing.T) {
					t.Parallel()
					s := f.server(t)
					tc.setup(s)
					req := history(nil)
					var got int
					if streaming {
						req.OnDelta = func(d string) { got += len(d) }
					}
					res, err := named(t, f, s.URL).Complete(t.Context(), req)
					require.Nil(t, res)
					var le *llm.Error
					require.ErrorAs(t, err, &le)
					require.False(t, le.Transient, "the same answer would come again")
					require.ErrorIs(t, err, llm.ErrResponseTooLarge)
					require.Equal(t, "LLM response exceeds 4 MiB (provider My Local Llama)", err.Error())
					require.LessOrEqual(t, got, llm.MaxResponseBytes)
				})
			}
		}
	}
}

func TestAnswersJustUnderTheCapPass(t *testing.T) {
	t.Parallel()
	for _, f := range sized {
		for _, streaming := range []bool{false, true} {
			t.Run(f.typ+map[bool]string{true: "/stream"}[streaming], func(t *testing.T) {
				t.Parallel()
				s := f.server(t)
				// The text leaves room for the JSON around it.
				s.SetReplySize(llm.MaxResponseBytes - 4096)
				req := history(nil)
				if streaming {
					req.OnDelta = func(string) {}
				}
				res, err := named(t, f, s.URL).Complete(t.Context(), req)
				require.NoError(t, err)
				require.Len(t, res.Text, llm.MaxResponseBytes-4096)
			})
		}
	}
}

func TestNonCompletionsFail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, contentType, body string
	}{
		{"html", "text/html; charset=utf-8", "<!doctype html><html><body>Sign in to the proxy</body></html>"},
		{"unrelated-json", "application/json", `{"status":"ok","items":[1,2,3]}`},
		{"json-array", "application/json", `[1,2,3]`},
		{"empty", "application/json", ""},
		{"empty-no-type", "", ""},
		{"plain-text", "text/plain", "hello"},
		{"sse-of-other-things", "text/event-stream", "event: hello\ndata: {\"x\":1}\n\n"},
	}
	for _, f := range fakes {
		for _, streaming := range []bool{false, true} {
			for _, tc := range cases {
				t.Run(f.typ+map[bool]string{true: "/stream"}[streaming]+"/"+tc.name, func(t *testing.T) {
					t.Parallel()
					s := f.server(t)
					s.SetRaw(http.StatusOK, tc.contentType, tc.body)
					req := history(nil)
					if streaming {
						req.OnDelta = func(string) { t.Error("a delta from a non-completion") }
					}
					res, err := named(t, f, s.URL).Complete(t.Context(), req)
					require.Nil(t, res)
					var le *llm.Error
					require.ErrorAs(t, err, &le)
					require.False(t, le.Transient, "a misconfigured base_url is not retried")
					require.Equal(t, http.StatusOK, le.Status)
					require.Contains(t, err.Error(), "LLM provider My Local Llama answered 200")
					require.Contains(t, err.Error(), "not a completion")
					require.NotContains(t, err.Error(), "0197a8c0", "the provider is named by its name, not its id")
				})
			}
		}
	}
}

func TestErrorsNameTheProviderByName(t *testing.T) {
	t.Parallel()
	for _, f := range fakes {
		t.Run(f.typ, func(t *testing.T) {
			t.Parallel()
			s := f.server(t)
			s.FailNext(1, http.StatusServiceUnavailable)
			_, err := named(t, f, s.URL).Complete(t.Context(), history(nil))
			require.ErrorContains(t, err, "LLM provider My Local Llama answered 503")
		})
	}
}

func TestOversizedErrorBodiesAreCapped(t *testing.T) {
	t.Parallel()
	for _, f := range fakes {
		t.Run(f.typ, func(t *testing.T) {
			t.Parallel()
			s := f.server(t)
			s.SetRaw(http.StatusBadGateway, "text/html", strings.Repeat("<p>gateway</p>\n\n", llm.MaxResponseBytes/15))
			_, err := named(t, f, s.URL).Complete(t.Context(), history(nil))
			require.ErrorIs(t, err, llm.ErrResponseTooLarge)
		})
	}
}
