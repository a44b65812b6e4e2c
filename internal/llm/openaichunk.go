package llm

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/tidwall/gjson"
)

// openAIChunk is what the stream reads of one chat.completion.chunk: the
// fields stream uses, nothing else. The SDK's own ChatCompletionChunk
// decodes every field of every chunk into its metadata (a gjson pass, then
// reflection per field), which was most of the stream's cost; this one
// decodes with encoding/json into the few fields needed. A chunk that
// encoding/json refuses (a field of an unexpected type, which the SDK's
// decoder tolerates) is decoded by the SDK, so that what a chunk means does
// not change. (encoding/json matches keys regardless of case and keeps
// the last of duplicate keys where the SDK keeps the first: no provider
// sends such chunks.)
type openAIChunk struct {
	// hasChoices: the chunk has a "choices" array (even empty): a
	// completion's chunk (the SDK's JSON.Choices.Valid()).
	hasChoices bool
	model      string
	usage      *Usage            // nil when the chunk has no usage
	choice     openAIChunkChoice // the first choice, if any
	hasChoice  bool
}

type openAIChunkChoice struct {
	FinishReason string `json:"finish_reason"`
	Delta        struct {
		Content   string                `json:"content"`
		ToolCalls []openAIChunkToolCall `json:"tool_calls"`
	} `json:"delta"`
}

type openAIChunkToolCall struct {
	Index    int64  `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// openAIChunkJSON is the wire shape encoding/json fills.
type openAIChunkJSON struct {
	Model   string               `json:"model"`
	Choices *[]openAIChunkChoice `json:"choices"`
	Usage   *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// decode reads one chunk.
func (c *openAIChunk) decode(data []byte) error {
	var w openAIChunkJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return c.unmarshalSDK(data)
	}
	*c = openAIChunk{model: w.Model, hasChoices: w.Choices != nil}
	if w.Usage != nil {
		c.usage = &Usage{PromptTokens: int(w.Usage.PromptTokens), CompletionTokens: int(w.Usage.CompletionTokens),
			TotalTokens: int(w.Usage.TotalTokens), CacheReadTokens: int(w.Usage.PromptTokensDetails.CachedTokens)}
	}
	if w.Choices != nil && len(*w.Choices) > 0 {
		c.choice, c.hasChoice = (*w.Choices)[0], true
	}
	return nil
}

// unmarshalSDK decodes data as the SDK does.
func (c *openAIChunk) unmarshalSDK(data []byte) error {
	var chunk openai.ChatCompletionChunk
	if err := json.Unmarshal(data, &chunk); err != nil {
		return err
	}
	*c = openAIChunk{model: chunk.Model, hasChoices: chunk.JSON.Choices.Valid()}
	if chunk.JSON.Usage.Valid() {
		u := openAIUsage(chunk.Usage)
		c.usage = &u
	}
	if len(chunk.Choices) > 0 {
		ch := chunk.Choices[0]
		c.hasChoice = true
		c.choice.FinishReason = ch.FinishReason
		c.choice.Delta.Content = ch.Delta.Content
		for _, d := range ch.Delta.ToolCalls {
			tc := openAIChunkToolCall{Index: d.Index, ID: d.ID}
			tc.Function.Name, tc.Function.Arguments = d.Function.Name, d.Function.Arguments
			c.choice.Delta.ToolCalls = append(c.choice.Delta.ToolCalls, tc)
		}
	}
	return nil
}

// chunkStream reads a chat completion stream as the SDK's ssestream.Stream
// does (the events up to [DONE], an event with an "error" key ends it as a
// *ssestream.StreamError), each event decoded once, as openAIChunk.
type chunkStream struct {
	dec  ssestream.Decoder // nil when the request failed
	err  error
	done bool // [DONE] came
	cur  openAIChunk
}

func (s *chunkStream) Next() bool {
	if s.err != nil || s.done || s.dec == nil {
		return false
	}
	if !s.dec.Next() {
		s.err = s.dec.Err()
		return false
	}
	ev := s.dec.Event()
	if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
		s.done = true
		return false
	}
	if ep := gjson.GetBytes(ev.Data, "error"); ep.Exists() {
		s.err = &ssestream.StreamError{Message: fmt.Sprintf("received error while streaming: %s", ep.String()), Event: ev}
		return false
	}
	if err := s.cur.decode(ev.Data); err != nil {
		s.err = err
		return false
	}
	return true
}

func (s *chunkStream) Current() *openAIChunk { return &s.cur }

func (s *chunkStream) Err() error { return s.err }

// Close closes the response body.
func (s *chunkStream) Close() error {
	if s.dec == nil {
		return nil
	}
	return s.dec.Close()
}
