package llm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpenAIChunkAsTheSDKReadsIt decodes chunks both ways, encoding/json
// (openAIChunk) and the SDK's ChatCompletionChunk (unmarshalSDK): a chunk
// means the same either way, and one encoding/json refuses still decodes.
func TestOpenAIChunkAsTheSDKReadsIt(t *testing.T) {
	for _, data := range []string{
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"héllo"},"logprobs":null,"finish_reason":null}]}`,
		`{"id":"c","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`,
		`{"id":"c","model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4}}}`,
		`{"id":"c","model":"m","usage":{}}`,
		`{"id":"c","choices":null}`,
		`{}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}},{"delta":{"content":"second choice"}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\":"}},{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}`,
		// Types encoding/json refuses: the SDK's decoder reads them.
		`{"model":"m","choices":[{"delta":{"content":"x"},"finish_reason":7}]}`,
		`{"model":"m","choices":[],"usage":{"prompt_tokens":"12","completion_tokens":3.0,"total_tokens":15}}`,
		`{"model":5,"choices":{"delta":{}}}`,
	} {
		var fast, sdk openAIChunk
		require.NoError(t, fast.decode([]byte(data)), data)
		require.NoError(t, sdk.unmarshalSDK([]byte(data)), data)
		require.Equal(t, sdk, fast, data)
	}
	var c openAIChunk
	require.Error(t, c.decode([]byte(`{"model":`)))
}
