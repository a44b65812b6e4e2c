package llmtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
)

// post sends body to url and returns the status and the raw answer.
func post(t *testing.T, ctx context.Context, url, body string, h map[string]string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// sseData returns the data lines of an event stream.
func sseData(raw string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

const openAIBody = `{"model":"gpt-test","temperature":0.25,"max_tokens":77,"stream":%s,
	"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},
	{"role":"assistant","content":"hello"},{"role":"user","content":"how are you"}]}`

func TestOpenAIRecordsAndAnswers(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	require.True(t, strings.HasSuffix(s.URL, "/v1"))

	status, body, err := post(t, t.Context(), s.URL+"/chat/completions", strings.Replace(openAIBody, "%s", "false", 1),
		map[string]string{"Authorization": "Bearer sk-1"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, body)
	var out struct {
		Choices []struct {
			Message      llm.Message `json:"message"`
			FinishReason string      `json:"finish_reason"`
		} `json:"choices"`
		Usage llm.Usage `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.Equal(t, "reply to: how are you", out.Choices[0].Message.Content)
	require.Equal(t, "stop", out.Choices[0].FinishReason)
	require.Equal(t, llm.Usage{PromptTokens: 7, CompletionTokens: 5, TotalTokens: 12}, out.Usage)

	reqs := s.Requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, "gpt-test", r.Model)
	require.Equal(t, 0.25, *r.Temperature)
	require.Equal(t, 77, r.MaxTokens)
	require.Equal(t, "be brief", r.System)
	require.Equal(t, "Bearer sk-1", r.Auth)
	require.False(t, r.Stream)
	require.Equal(t, []llm.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"},
		{Role: "user", Content: "how are you"}}, r.Messages)
	require.Equal(t, []llm.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"},
		{Role: "assistant", Content: "hello"}, {Role: "user", Content: "how are you"}}, r.Sent)

	// A role the API does not know is refused, as OpenAI does.
	status, body, err = post(t, t.Context(), s.URL+"/chat/completions",
		`{"model":"m","messages":[{"role":"robot","content":"beep"}]}`, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, status, body)
	require.Equal(t, []llm.Message{{Role: "robot", Content: "beep"}}, s.Requests()[1].Sent)
}

func TestOpenAIStreamsChunksAndUsage(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	s.SetReply("one two three four")
	status, body, err := post(t, t.Context(), s.URL+"/chat/completions", strings.Replace(openAIBody, "%s", "true", 1), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	data := sseData(body)
	require.Equal(t, "[DONE]", data[len(data)-1])
	var text strings.Builder
	var deltas int
	var usage *llm.Usage
	for _, d := range data[:len(data)-1] {
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Usage *llm.Usage `json:"usage"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &c))
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			deltas++
			text.WriteString(c.Choices[0].Delta.Content)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
	}
	require.Equal(t, 4, deltas)
	require.Equal(t, "one two three four", text.String())
	require.NotNil(t, usage)
	require.Equal(t, 4, usage.CompletionTokens)
	require.True(t, s.Requests()[0].Stream)
}

const anthropicBody = `{"model":"claude-test","max_tokens":50,"temperature":1,"stream":%s,
	"system":[{"type":"text","text":"be kind"}],
	"messages":[{"role":"user","content":[{"type":"text","text":"hello there"}]}]}`

func TestAnthropicRecordsAndAnswers(t *testing.T) {
	t.Parallel()
	s := llmtest.NewAnthropic(t)
	status, body, err := post(t, t.Context(), s.URL+"/v1/messages", strings.Replace(anthropicBody, "%s", "false", 1),
		map[string]string{"X-Api-Key": "ak-1"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"text":"reply to: hello there"`)
	require.Contains(t, body, `"stop_reason":"end_turn"`)
	r := s.Requests()[0]
	require.Equal(t, "claude-test", r.Model)
	require.Equal(t, 1.0, *r.Temperature)
	require.Equal(t, 50, r.MaxTokens)
	require.Equal(t, "be kind", r.System)
	require.Equal(t, "ak-1", r.Auth)
	require.Equal(t, []llm.Message{{Role: "user", Content: "hello there"}}, r.Messages)
	require.Equal(t, []llm.Message{{Role: "system", Content: "be kind"}, {Role: "user", Content: "hello there"}}, r.Sent)

	// The Messages API has no system turn: one is refused, as Anthropic does.
	status, body, err = post(t, t.Context(), s.URL+"/v1/messages",
		`{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"be kind"},{"role":"user","content":"hi"}]}`, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, status, body)

	status, body, err = post(t, t.Context(), s.URL+"/v1/messages", strings.Replace(anthropicBody, "%s", "true", 1), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	var text strings.Builder
	for _, d := range sseData(body) {
		var ev struct {
			Type  string `json:"type"`
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &ev))
		if ev.Type == "content_block_delta" {
			text.WriteString(ev.Delta.Text)
		}
	}
	require.Equal(t, "reply to: hello there", text.String())
	require.Equal(t, 3, s.Calls())
}

func TestFailNextThenSucceed(t *testing.T) {
	t.Parallel()
	for _, s := range []*llmtest.Server{llmtest.NewOpenAI(t), llmtest.NewAnthropic(t)} {
		url, body := s.URL+"/chat/completions", strings.Replace(openAIBody, "%s", "false", 1)
		if !strings.HasSuffix(s.URL, "/v1") {
			url, body = s.URL+"/v1/messages", strings.Replace(anthropicBody, "%s", "false", 1)
		}
		s.FailNext(2, http.StatusServiceUnavailable)
		for range 2 {
			status, answer, err := post(t, t.Context(), url, body, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusServiceUnavailable, status)
			require.Contains(t, answer, `"error"`)
		}
		status, _, err := post(t, t.Context(), url, body, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, 3, s.Calls())
	}
}

func TestBlockHoldsUntilReleaseOrCancel(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	release := s.Block()
	body := strings.Replace(openAIBody, "%s", "false", 1)

	// A cancelled client ends its blocked call.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, _, err := post(t, ctx, s.URL+"/chat/completions", body, nil)
		done <- err
	}()
	s.WaitCalls(t, 1)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	// A released gate lets the call through.
	answered := make(chan int, 1)
	go func() {
		status, _, _ := post(t, t.Context(), s.URL+"/chat/completions", body, nil)
		answered <- status
	}()
	s.WaitCalls(t, 2)
	select {
	case <-answered:
		t.Fatal("answered while blocked")
	default:
	}
	release()
	release()
	require.Equal(t, http.StatusOK, <-answered)
}

func TestDelayHonoursCancel(t *testing.T) {
	t.Parallel()
	s := llmtest.NewAnthropic(t)
	s.SetDelay(time.Hour)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := post(t, ctx, s.URL+"/v1/messages", strings.Replace(anthropicBody, "%s", "false", 1), nil)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.Less(t, time.Since(start), 10*time.Second)
}

// An unreleased Block must not hang the test's cleanup.
func TestUnreleasedBlockDoesNotHangCleanup(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	s.Block()
	go func() {
		if resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader("{}")); err == nil {
			resp.Body.Close()
		}
	}()
	s.WaitCalls(t, 1)
}

// TestHoldAfterPausesAStreamHalfWay: the first n fragments arrive, the rest
// only after release.
func TestHoldAfterPausesAStreamHalfWay(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	s.SetReply("one two three")
	reached, release := s.HoldAfter(1)
	defer release()

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/chat/completions",
		strings.NewReader(strings.Replace(openAIBody, "%s", "true", 1)))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	<-reached
	// The role chunk and the first fragment are flushed; nothing more.
	r := bufio.NewReader(resp.Body)
	var contents []string
	readChunk := func() string {
		for {
			line, err := r.ReadString('\n')
			require.NoError(t, err)
			if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				return d
			}
		}
	}
	for len(contents) < 1 {
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(readChunk()), &c))
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			contents = append(contents, c.Choices[0].Delta.Content)
		}
	}
	require.Equal(t, []string{"one "}, contents)
	release()
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Contains(t, string(rest), `"two "`)
	require.Contains(t, string(rest), `"three"`)
	require.Contains(t, string(rest), "[DONE]")

	// Only the next streamed answer was held.
	status, body, err := post(t, t.Context(), s.URL+"/chat/completions", strings.Replace(openAIBody, "%s", "true", 1), nil)
	require.NoError(t, err)
	require.Equal(t, 200, status)
	require.Contains(t, body, "[DONE]")
}

func TestRawAnswersAndOversizedReplies(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	body := strings.Replace(openAIBody, "%s", "false", 1)

	// A raw answer is served as is, streaming asked or not, until reset.
	s.SetRaw(http.StatusOK, "text/html", "<html>login</html>")
	for _, stream := range []string{"false", "true"} {
		status, got, err := post(t, t.Context(), s.URL+"/chat/completions", strings.Replace(openAIBody, "%s", stream, 1), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "<html>login</html>", got)
	}
	s.SetRaw(0, "", "")
	_, got, err := post(t, t.Context(), s.URL+"/chat/completions", body, nil)
	require.NoError(t, err)
	require.Contains(t, got, "reply to: how are you")

	// An oversized reply: n bytes in words of at most 64 KiB.
	s.SetReplySize(200 << 10)
	_, got, err = post(t, t.Context(), s.URL+"/chat/completions", strings.Replace(openAIBody, "%s", "true", 1), nil)
	require.NoError(t, err)
	text := ""
	for _, d := range sseData(got) {
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if d == "[DONE]" || json.Unmarshal([]byte(d), &c) != nil || len(c.Choices) == 0 {
			continue
		}
		require.LessOrEqual(t, len(c.Choices[0].Delta.Content), 64<<10)
		text += c.Choices[0].Delta.Content
	}
	require.Len(t, text, 200<<10)
}
