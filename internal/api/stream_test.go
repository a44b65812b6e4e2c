package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// sseEvent is one dispatched Server-Sent Event.
type sseEvent struct {
	id   string // the last event id in effect, as EventSource keeps it
	name string
	data map[string]any
}

// sseStream reads an event stream the way the HTML EventSource algorithm
// does: lines of "field: value", a blank line dispatches, an "id" field
// sets the last event id (kept across events), comments start with ":".
type sseStream struct {
	t      testing.TB
	res    *http.Response
	r      *bufio.Reader
	lastID string
	cancel context.CancelFunc
}

// openSSE sends the request and returns the answer unread; the test reads
// its events with next. It is closed when the test ends.
func (e *env) openSSE(method, path string, body any, opts ...opt) *sseStream {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(e.t, err)
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, rd)
	require.NoError(e.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		require.NoError(e.t, err)
	}
	s := &sseStream{t: e.t, res: res, r: bufio.NewReader(res.Body), cancel: cancel}
	e.t.Cleanup(s.close)
	return s
}

// close hangs up, as a client that goes away.
func (s *sseStream) close() {
	s.cancel()
	s.res.Body.Close()
}

// next returns the next event; ok is false when the stream ended.
func (s *sseStream) next() (ev sseEvent, ok bool) {
	s.t.Helper()
	var data []string
	name := ""
	for {
		line, err := s.r.ReadString('\n')
		if err == io.EOF && line == "" {
			return sseEvent{}, false
		}
		require.NoError(s.t, err)
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if data == nil {
				name = ""
				continue
			}
			if name == "" {
				name = "message"
			}
			ev = sseEvent{id: s.lastID, name: name}
			require.NoError(s.t, json.Unmarshal([]byte(strings.Join(data, "\n")), &ev.data), "data: %q", data)
			return ev, true
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment (keep-alive)
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data = append(data, value)
		case "id":
			s.lastID = value
		}
	}
}

// rest reads events until the stream ends.
func (s *sseStream) rest() []sseEvent {
	s.t.Helper()
	var out []sseEvent
	for {
		ev, ok := s.next()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// tokens checks that evs are token events numbered from first on and
// returns their text.
func tokens(t *testing.T, evs []sseEvent, first int) string {
	t.Helper()
	var text strings.Builder
	for i, ev := range evs {
		require.Equal(t, "token", ev.name, "event %d: %+v", i, ev)
		require.Equal(t, itoa(int64(first+i)), ev.id, "event %d", i)
		text.WriteString(ev.data["delta"].(string))
	}
	return text.String()
}

// streamEnv is a server whose openai provider is the test LLM, and a user
// with an LLM agent on it.
type streamEnv struct {
	*env
	fake  *llmtest.Server
	token string
	agent agentFixture
}

const streamReply = "one two three four five"

func newStreamEnv(t *testing.T, d store.Dialect) *streamEnv {
	t.Helper()
	fake := llmtest.NewOpenAI(t)
	e := newEnv(t, d, map[string]string{"AP_OPENAI_BASE_URL": fake.URL, "AP_OPENAI_API_KEY": "sk-test"})
	token := e.signup("u@example.com")
	return &streamEnv{env: e, fake: fake, token: token,
		agent: e.llmAgent(token, map[string]any{"model": "gpt", "provider_id": "openai"}, 60)}
}

func (s *streamEnv) input(prompt string) map[string]any {
	return map[string]any{"input_data": map[string]any{"prompt": prompt}}
}

// TestActivateAndStreamFromTheFirstToken: Accept: text/event-stream on
// activate answers 201 with the activation's stream from its first token,
// even when the LLM sent tokens before the stream was attached; a stream
// reopened with Last-Event-ID gets exactly the rest; a reconnect after the
// final event is 204, which stops EventSource.
func TestActivateAndStreamFromTheFirstToken(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		s := newStreamEnv(t, d)
		s.fake.SetReply(streamReply)
		reached, release := s.fake.HoldAfter(2)
		defer release()

		st := s.openSSE("POST", "/api/v1/agents/"+s.agent.agentID+"/activate", s.input("go"),
			bearer(s.token), header("Accept", "text/event-stream"))
		require.Equal(t, http.StatusCreated, st.res.StatusCode)
		require.Equal(t, "text/event-stream", st.res.Header.Get("Content-Type"))
		loc := st.res.Header.Get("Location")
		require.True(t, strings.HasPrefix(loc, "/api/v1/activations/"), "Location: %q", loc)
		id := strings.TrimPrefix(loc, "/api/v1/activations/")
		<-reached
		var got []sseEvent
		for len(got) < 2 {
			ev, ok := st.next()
			require.True(t, ok)
			got = append(got, ev)
		}
		require.Equal(t, "one two ", tokens(t, got, 1))
		st.close() // the client drops off half-way

		// A stream opened after the first tokens went out starts with them.
		all := s.openSSE("GET", "/api/v1/activations/"+id+"/stream", nil, bearer(s.token))
		require.Equal(t, http.StatusOK, all.res.StatusCode)
		// Resuming after event 1 gets event 2 and what follows, nothing twice.
		resumed := s.openSSE("GET", "/api/v1/activations/"+id+"/stream", nil, bearer(s.token), header("Last-Event-ID", "1"))
		require.Equal(t, http.StatusOK, resumed.res.StatusCode)
		ev, ok := resumed.next()
		require.True(t, ok)
		require.Equal(t, "two ", tokens(t, []sseEvent{ev}, 2))
		release()

		for _, stream := range []struct {
			s     *sseStream
			first int
			head  []sseEvent
		}{{all, 1, nil}, {resumed, 2, []sseEvent{ev}}} {
			evs := append(stream.head, stream.s.rest()...)
			last := evs[len(evs)-1]
			require.Equal(t, "activation", last.name)
			require.Equal(t, "end", last.id)
			require.Equal(t, "completed", last.data["status"])
			require.Equal(t, id, last.data["activation_id"])
			response := last.data["output_data"].(map[string]any)["response"].(string)
			require.Equal(t, streamReply, response)
			text := tokens(t, evs[:len(evs)-1], stream.first)
			if stream.first == 1 {
				require.Equal(t, response, text)
			} else {
				require.Equal(t, strings.TrimPrefix(response, "one "), text)
			}
		}

		// After the final event: 204, and EventSource stops reconnecting.
		r := s.do("GET", "/api/v1/activations/"+id+"/stream", nil, bearer(s.token), header("Last-Event-ID", "end"))
		require.Equal(t, http.StatusNoContent, r.Status)
		require.Empty(t, r.Body)
		// A new stream of the ended activation still has its tokens.
		again := s.openSSE("GET", "/api/v1/activations/"+id+"/stream", nil, bearer(s.token)).rest()
		require.Len(t, again, 6)
		require.Equal(t, streamReply, tokens(t, again[:5], 1))
		require.Equal(t, "end", again[5].id)
		// A resume from the last token gets only the final event.
		tail := s.openSSE("GET", "/api/v1/activations/"+id+"/stream", nil, bearer(s.token), header("Last-Event-ID", "5")).rest()
		require.Len(t, tail, 1)
		require.Equal(t, "activation", tail[0].name)
	})
}

// TestStreamAuthAndErrors: ?token= works like the header (EventSource
// cannot send one), a bad token is 401, a bad Last-Event-ID is 400 naming
// the header, another user's activation is 404.
func TestStreamAuthAndErrors(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		s := newStreamEnv(t, d)
		id := s.do("POST", "/api/v1/agents/"+s.agent.agentID+"/activate", s.input("hi"), bearer(s.token), header("Prefer", "wait=30")).
			expect(t, 201).str("activation_id")
		key := s.keyWith(s.token, "app:access")

		for _, token := range []string{s.token, key} {
			st := s.openSSE("GET", "/api/v1/activations/"+id+"/stream?token="+token, nil)
			require.Equal(t, http.StatusOK, st.res.StatusCode)
			evs := st.rest()
			require.Equal(t, "activation", evs[len(evs)-1].name)
			require.Equal(t, "reply to: hi", tokens(t, evs[:len(evs)-1], 1))
		}
		s.do("GET", "/api/v1/activations/"+id+"/stream?token=ak_nope", nil).expectError(t, 401, "AuthenticationError", "Invalid API key")
		s.do("GET", "/api/v1/activations/"+id+"/stream?token=st_nope", nil).expect(t, 401)
		s.do("GET", "/api/v1/activations/"+id+"/stream", nil).expectError(t, 401, "AuthenticationError", "Authentication required")
		s.do("GET", "/api/v1/activations/"+id+"/stream", nil, bearer(s.token), header("Last-Event-ID", "x7")).
			expectError(t, 400, "ValidationError", "Last-Event-ID")

		other := s.signup("other@example.com")
		s.do("GET", "/api/v1/activations/"+id+"/stream", nil, bearer(other)).expectError(t, 404, "NotFoundError", "Activation not found")
		s.do("GET", "/api/v1/activations/"+id+"/stream?token="+other, nil).expectError(t, 404, "NotFoundError", "Activation not found")
	})
}

// TestStreamOfAQueuedActivation: a stream opened before the run starts
// gets every token once it runs.
func TestStreamOfAQueuedActivation(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		s := newStreamEnv(t, d)
		admin := s.token // the first account is the admin
		s.do("POST", "/api/v1/worker/pause", nil, bearer(admin)).expect(t, 200)
		id := s.do("POST", "/api/v1/activations", map[string]any{"agent_id": s.agent.agentID, "input_data": map[string]any{"prompt": "later"}},
			bearer(s.token)).expect(t, 201).str("activation_id")
		st := s.openSSE("GET", "/api/v1/activations/"+id+"/stream", nil, bearer(s.token))
		require.Equal(t, http.StatusOK, st.res.StatusCode)
		s.do("POST", "/api/v1/worker/resume", nil, bearer(admin)).expect(t, 200)
		evs := st.rest()
		require.Equal(t, "completed", evs[len(evs)-1].data["status"])
		require.Equal(t, "reply to: later", tokens(t, evs[:len(evs)-1], 1))

		// Cancelled before it ran: the final event alone.
		s.do("POST", "/api/v1/worker/pause", nil, bearer(admin)).expect(t, 200)
		for attempt := 1; ; attempt++ {
			id = s.do("POST", "/api/v1/activations", map[string]any{"agent_id": s.agent.agentID, "input_data": map[string]any{"prompt": "never"}},
				bearer(s.token)).expect(t, 201).str("activation_id")
			st = s.openSSE("GET", "/api/v1/activations/"+id+"/stream", nil, bearer(s.token))
			r := s.do("POST", "/api/v1/activations/"+id+"/cancel", nil, bearer(s.token))
			// River applies a pause soon, not at once: a job it fetched
			// just before may still run. The next one waits.
			if r.Status == http.StatusConflict && attempt < 5 {
				st.close()
				continue
			}
			r.expect(t, 200)
			break
		}
		evs = st.rest()
		require.Len(t, evs, 1)
		require.Equal(t, "end", evs[0].id)
		require.Equal(t, "failed", evs[0].data["status"])
		require.Equal(t, "Activation cancelled", evs[0].data["error"])
		s.do("POST", "/api/v1/worker/resume", nil, bearer(admin)).expect(t, 200)
	})
}

// TestOpenAPIDocumentsCreateAndStream: the activate calls document Prefer,
// their answer headers and the 201 event stream; the stream documents
// Last-Event-ID, ?token= and its 204.
func TestOpenAPIDocumentsCreateAndStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	type param struct {
		Name string `json:"name"`
		In   string `json:"in"`
	}
	type response struct {
		Content map[string]struct {
			Schema map[string]any `json:"schema"`
		} `json:"content"`
		Headers map[string]any `json:"headers"`
	}
	type operation struct {
		Description string              `json:"description"`
		Parameters  []param             `json:"parameters"`
		Responses   map[string]response `json:"responses"`
	}
	var doc struct {
		Paths map[string]map[string]operation `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200).Body, &doc))

	for _, path := range []string{"/api/v1/agents/{agent_id}/activate", "/api/v1/apps/{app_id}/agents/{agent_id}/activate", "/api/v1/activations"} {
		op := doc.Paths[path]["post"]
		require.Contains(t, op.Parameters, param{"Prefer", "header"}, path)
		require.Contains(t, op.Parameters, param{"Idempotency-Key", "header"}, path)
		created := op.Responses["201"]
		require.Contains(t, created.Content, "text/event-stream", path)
		require.NotNil(t, created.Content["application/json"].Schema, path)
		for _, h := range []string{"Location", "Preference-Applied", "Idempotent-Replayed"} {
			require.Contains(t, created.Headers, h, path)
		}
		require.Contains(t, op.Description, "Prefer: wait=N", path)
		require.Contains(t, op.Description, "Accept: text/event-stream", path)
	}

	stream := doc.Paths["/api/v1/activations/{activation_id}/stream"]["get"]
	require.Contains(t, stream.Parameters, param{"Last-Event-ID", "header"})
	require.Contains(t, stream.Parameters, param{"token", "query"})
	require.Contains(t, stream.Responses["200"].Content, "text/event-stream")
	require.Contains(t, stream.Responses, "204")
}

// TestStreamsEndWhenTheServerStops: an open stream ends (without its
// final event) when the HTTP server shuts down, rather than holding the
// drain up; the client resumes with Last-Event-ID.
func TestStreamsEndWhenTheServerStops(t *testing.T) {
	t.Parallel()
	s := newStreamEnv(t, store.SQLite)
	release := s.fake.Block()
	defer release()
	st := s.openSSE("POST", "/api/v1/activations", map[string]any{"agent_id": s.agent.agentID, "input_data": map[string]any{"prompt": "x"}},
		bearer(s.token), header("Accept", "text/event-stream"))
	require.Equal(t, http.StatusCreated, st.res.StatusCode)
	s.fake.WaitCalls(t, 1)
	s.srv.API.CloseStreams()
	require.Empty(t, st.rest())
}
