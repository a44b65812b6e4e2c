// Package llmtest owns the fake LLM servers of the tests: an OpenAI-compatible
// and an Anthropic-compatible HTTP server that answer deterministically,
// record every request, and can be told to be slow, to fail or to hang, so
// that tests of providers, activations and cancellation run against real HTTP
// without a network or a key.
package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/llm"
)

// Recorded is one request as the fake server understood it.
type Recorded struct {
	Path        string
	Model       string
	Temperature *float64
	System      string        // the system prompt; empty for none
	MaxTokens   int           // 0 when not sent
	Messages    []llm.Message // without the system prompt, in order
	Stream      bool
	// Auth is the credential sent: the Authorization header for OpenAI,
	// the x-api-key header for Anthropic.
	Auth string
	// Sent is every message as the wire carried it, in order, with its
	// role: OpenAI's system messages in their place among the others;
	// Anthropic's system text blocks first (role system), then its
	// messages. A role the provider refuses fails the call with a 400.
	// Tool turns too are as sent: for OpenAI one tool message per result,
	// for Anthropic one user message holding every tool_result block
	// (Messages has them as the llm package does, one RoleTool turn).
	Sent []llm.Message
	// Tools are the tools offered, in order, with their schema as sent
	// (OpenAI's function parameters, Anthropic's input_schema); nil when
	// the request had none.
	Tools []llm.Tool
	// ToolChoice is the tool_choice sent: OpenAI's string ("none",
	// "auto"…) or Anthropic's type; "" when not sent.
	ToolChoice string
	// Body is the request body as it came, for what the fields above do
	// not tell (that a key is absent, say).
	Body []byte
}

// Reply is one scripted answer: text, tool calls, or both (the text
// first). A call without an ID gets one unique to the server.
type Reply struct {
	Text      string
	ToolCalls []llm.ToolCall
	// CacheRead and CacheWrite are the prompt-cache tokens the answer
	// reports, each as its provider does: OpenAI's cached_tokens within
	// prompt_tokens (which grow by CacheRead; it has no cache writes),
	// Anthropic's cache_read_input_tokens and cache_creation_input_tokens
	// beside input_tokens.
	CacheRead, CacheWrite int
}

// words is how many words the fake counts for the answer as tokens: its
// text's and its calls' arguments'.
func (r Reply) words() int {
	n := Words(r.Text)
	for _, c := range r.ToolCalls {
		n += Words(c.Arguments)
	}
	return n
}

// flavor is the wire format a Server speaks.
type flavor interface {
	path() string
	parse(body []byte, h http.Header) (Recorded, error)
	// writeError answers status with the provider's error body; message ""
	// is the status text.
	writeError(w http.ResponseWriter, status int, message string)
	writeJSON(w http.ResponseWriter, rec Recorded, reply Reply)
	// writeStream streams the reply's text in llm.Fragments, then its
	// calls; it calls pause(i) before it writes fragment i (0-based).
	writeStream(w http.ResponseWriter, rec Recorded, reply Reply, pause func(i int))
}

// Server is a running fake provider. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL a client is configured with: for OpenAI it ends
	// in /v1 (openai-go appends chat/completions), for Anthropic it is the
	// origin (anthropic-sdk-go appends v1/messages).
	URL string

	flavor flavor
	srv    *httptest.Server

	mu       sync.Mutex
	requests []Recorded
	calls    int
	reply    string
	delay    time.Duration
	failN    int
	failCode int
	gate     chan struct{} // non-nil while Block holds calls
	hold     *hold         // set by HoldAfter for the next streamed answer
	arrived  chan struct{} // closed and replaced on every call, for WaitCalls
	raw      *rawAnswer    // non-nil: every call gets it instead of a completion
	queue    []Reply       // scripted answers, before reply
	script   Script        // answers from the request, before all else
	callIDs  int           // tool call ids given so far
	conns    int           // connections opened so far
}

// rawAnswer is an answer that is not the provider's format.
type rawAnswer struct {
	status      int
	contentType string
	body        string
}

// NewOpenAI starts an OpenAI-compatible POST /v1/chat/completions, closed
// when the test ends.
func NewOpenAI(t testing.TB) *Server {
	s := start(t, openAI{})
	s.URL = s.srv.URL + "/v1"
	return s
}

// NewAnthropic starts an Anthropic-compatible POST /v1/messages, closed when
// the test ends.
func NewAnthropic(t testing.TB) *Server {
	s := start(t, anthropic{})
	s.URL = s.srv.URL
	return s
}

func start(t testing.TB, f flavor) *Server {
	t.Helper()
	s := &Server{flavor: f, arrived: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+f.path(), s.handle)
	// On the tests' outside-world address, which the platform reaches
	// through its egress guard only with AP_EGRESS_ALLOW=127.0.0.2/32.
	s.srv = egresstest.NewUnstartedServer(t, mux)
	s.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.srv.Start()
	t.Cleanup(func() {
		// A test that blocked calls and never released them must not hang
		// Close, which waits for every handler.
		s.releaseAll()
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Recorded, len(s.requests))
	copy(out, s.requests)
	return out
}

// Calls is the number of requests received so far, failed ones included.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Conns is the number of connections clients opened so far: a client
// that keeps its connections opens no more for calls after the first.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// WaitCalls waits until at least n requests have arrived (blocked ones
// included), failing the test after 10 s.
func (s *Server) WaitCalls(t testing.TB, n int) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		calls, arrived := s.calls, s.arrived
		s.mu.Unlock()
		if calls >= n {
			return
		}
		select {
		case <-arrived:
		case <-deadline.C:
			t.Fatalf("llmtest: %d calls arrived, want %d", calls, n)
		}
	}
}

// SetReply makes every following answer text; "" restores the default
// "reply to: <last user message>".
func (s *Server) SetReply(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = text
}

// Queue scripts the next answers, one per call in order (a call that
// fails, by FailNext, SetRaw or a refused request, takes none); once they
// are used up, the answers are SetReply's again. A tool loop of three
// steps is Queue(Reply{ToolCalls: …}, Reply{ToolCalls: …}, Reply{Text: …}).
func (s *Server) Queue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range replies {
		r.ToolCalls = append([]llm.ToolCall(nil), r.ToolCalls...)
		for i := range r.ToolCalls {
			if r.ToolCalls[i].ID == "" {
				s.callIDs++
				r.ToolCalls[i].ID = fmt.Sprintf("call_llmtest_%d", s.callIDs)
			}
		}
		s.queue = append(s.queue, r)
	}
}

// Script answers a call from what it asked: the reply of a conversation
// that depends on its history (a tool loop whose calls may be repeated
// after a crash). It may block until ctx ends (the caller gave up); ok
// false answers as if there were no script.
type Script func(ctx context.Context, rec Recorded) (r Reply, ok bool)

// SetScript makes fn answer every following call it knows; nil removes it.
// Calls fn answers still count and are recorded.
func (s *Server) SetScript(fn Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = fn
}

// SetToolCalls makes the next answer call the tools: Queue of one answer
// with those calls and no text.
func (s *Server) SetToolCalls(calls ...llm.ToolCall) { s.Queue(Reply{ToolCalls: calls}) }

// SetReplySize makes every following answer a text of n bytes, in words of
// up to 64 KiB (so a stream sends deltas of that size): an oversized
// completion. SetReply("") restores the default.
func (s *Server) SetReplySize(n int) {
	const word = 64 << 10
	var b strings.Builder
	b.Grow(n)
	for b.Len() < n {
		chunk := min(word, n-b.Len())
		b.WriteString(strings.Repeat("x", chunk-1))
		b.WriteByte(' ')
	}
	s.SetReply(b.String())
}

// SetRaw makes every following call answer status with body as it is,
// under contentType, whatever the request asked (streaming or not): an HTML
// page, JSON that is not a completion, an empty 200. SetRaw(0, "", "")
// restores real answers.
func (s *Server) SetRaw(status int, contentType, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw = nil
	if status != 0 {
		s.raw = &rawAnswer{status: status, contentType: contentType, body: body}
	}
}

// SetDelay makes every following call wait d before answering; a client
// that cancels meanwhile ends the call at once.
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// FailNext makes the next n calls answer status with the provider's error
// body, e.g. FailNext(2, 503) then success.
func (s *Server) FailNext(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failN, s.failCode = n, status
}

// Block makes calls hang until release is called or their client cancels.
// Calls already received are recorded first, so a test can wait for
// Calls() to grow and then cancel. release is idempotent.
func (s *Server) Block() (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gate := make(chan struct{})
	s.gate = gate
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.gate == gate {
				s.gate = nil
			}
			s.mu.Unlock()
			close(gate)
		})
	}
}

// HoldAfter makes the next streamed answer send its first n fragments and
// then wait until release is called or its client cancels: a run held open
// half-way, for tests of live token streams. reached is closed once the n
// fragments are written and flushed. release is idempotent.
func (s *Server) HoldAfter(n int) (reached <-chan struct{}, release func()) {
	h := &hold{after: n, reached: make(chan struct{}), gate: make(chan struct{})}
	s.mu.Lock()
	s.hold = h
	s.mu.Unlock()
	return h.reached, h.release
}

// hold is one HoldAfter.
type hold struct {
	after   int
	reached chan struct{}
	gate    chan struct{}
	once    sync.Once
}

func (h *hold) release() { h.once.Do(func() { close(h.gate) }) }

// pause is the writeStream callback: it blocks before fragment h.after.
func (h *hold) pause(r *http.Request) func(int) {
	return func(i int) {
		if h == nil || i != h.after {
			return
		}
		close(h.reached)
		select {
		case <-h.gate:
		case <-r.Context().Done():
		}
	}
}

func (s *Server) releaseAll() {
	s.mu.Lock()
	gate, held := s.gate, s.hold
	s.gate, s.hold = nil, nil
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}
	if held != nil {
		held.release()
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.flavor.writeError(w, http.StatusBadRequest, "")
		return
	}
	rec, err := s.flavor.parse(body, r.Header)
	rec.Path, rec.Body = r.URL.Path, body

	s.mu.Lock()
	s.calls++
	s.requests = append(s.requests, rec)
	close(s.arrived)
	s.arrived = make(chan struct{})
	reply, delay, gate, raw := s.reply, s.delay, s.gate, s.raw
	var held *hold
	if rec.Stream && err == nil {
		held, s.hold = s.hold, nil
	}
	fail := 0
	if s.failN > 0 {
		s.failN--
		fail = s.failCode
	}
	script := s.script
	var answer Reply
	scripted := false
	if err == nil && fail == 0 && raw == nil && script != nil {
		s.mu.Unlock()
		answer, scripted = script(r.Context(), rec)
		if r.Context().Err() != nil {
			return
		}
		s.mu.Lock()
	}
	if scripted {
		// answered by the script
	} else if err == nil && fail == 0 && raw == nil && len(s.queue) > 0 {
		answer = s.queue[0]
		s.queue = s.queue[1:]
	} else if reply != "" {
		answer.Text = reply
	} else {
		answer.Text = "reply to: " + lastUser(rec.Messages)
	}
	s.mu.Unlock()

	if err != nil {
		s.flavor.writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if fail != 0 {
		s.flavor.writeError(w, fail, "")
		return
	}
	if raw != nil {
		if raw.contentType != "" {
			w.Header().Set("Content-Type", raw.contentType)
		}
		w.WriteHeader(raw.status)
		_, _ = io.WriteString(w, raw.body)
		return
	}
	if rec.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		s.flavor.writeStream(w, rec, answer, held.pause(r))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	s.flavor.writeJSON(w, rec, answer)
}

// Words counts the words of the texts; the fake servers report it as tokens.
func Words(texts ...string) int {
	n := 0
	for _, t := range texts {
		n += len(strings.Fields(t))
	}
	return n
}

func lastUser(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

// promptWords counts the words of the system prompt and of the messages:
// their texts, their calls' arguments and their tool results.
func promptWords(rec Recorded) int {
	n := Words(rec.System)
	for _, m := range rec.Messages {
		n += Words(m.Content)
		for _, c := range m.ToolCalls {
			n += Words(c.Arguments)
		}
		for _, r := range m.Results {
			n += Words(r.Content)
		}
	}
	return n
}

// halves splits s in two at a character boundary: the fakes stream a
// call's arguments in (at least) two pieces, as the providers do.
func halves(s string) [2]string {
	i := len(s) / 2
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return [2]string{s[:i], s[i:]}
}

// sse writes one Server-Sent Event and flushes it, so a client sees the
// fragments arrive one by one.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// content is a message content: a plain string or a list of text blocks
// (both formats accept either), their texts joined.
type content string

func (c *content) UnmarshalJSON(b []byte) error {
	var bl blocks
	if err := bl.UnmarshalJSON(b); err != nil {
		return err
	}
	*c = content(strings.Join(bl, ""))
	return nil
}

// blocks is the texts of a content: one for a plain string, one per text
// block of a list.
type blocks []string

func (bl *blocks) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*bl = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*bl = blocks{s}
		return nil
	}
	var list []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*bl = make(blocks, 0, len(list))
	for _, x := range list {
		*bl = append(*bl, x.Text)
	}
	return nil
}
