// Package llmtest is an HTTP test server speaking Ollama's /api/chat (non-streaming: one JSON
// line per answer), scripted with the answers it gives and counting the calls it receives.
package llmtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Answer is one scripted reply: Content is the message text; DoneReason defaults to "stop";
// Status other than 0 and 200 replies with that HTTP status and an error body instead; Hang
// answers nothing until the client gives up (its request's context ends).
type Answer struct {
	Content    string
	DoneReason string
	Status     int
	Hang       bool
}

// Server is a fake Ollama server. Answers are given in order; the last one repeats.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	answers  []Answer
	calls    int
	requests []Request
}

// Request is what the server received in one /api/chat call.
type Request struct {
	Model    string          `json:"model"`
	Messages []Message       `json:"messages"`
	Stream   *bool           `json:"stream"`
	Format   json.RawMessage `json:"format"`
	Options  map[string]any  `json:"options"`
}

// Message is a chat message of a Request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// New starts a fake server answering with answers (at least one) and closes it when t ends.
func New(t testing.TB, answers ...Answer) *Server {
	t.Helper()
	if len(answers) == 0 {
		t.Fatal("llmtest: give at least one answer")
	}
	s := &Server{answers: answers}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// Script replaces the answers still to come.
func (s *Server) Script(answers ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = answers
}

// Calls returns how many /api/chat calls were received.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Requests returns the received /api/chat requests, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/chat" || r.Method != http.MethodPost {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls++
	s.requests = append(s.requests, req)
	a := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	s.mu.Unlock()
	if a.Hang {
		<-r.Context().Done()
		return
	}
	if a.Status != 0 && a.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.Status)
		_, _ = w.Write([]byte(`{"error":"scripted failure"}` + "\n")) // a test server's answer: a caller gone away is the test's concern
		return
	}
	reason := a.DoneReason
	if reason == "" {
		reason = "stop"
	}
	line, _ := json.Marshal(map[string]any{
		"model": req.Model, "created_at": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"role": "assistant", "content": a.Content},
		"done":    true, "done_reason": reason,
	})
	w.Header().Set("Content-Type", "application/x-ndjson")
	_, _ = w.Write(append(line, '\n')) // a test server's answer: a caller gone away is the test's concern
}

// Note returns an answer proposing a note with the given fields.
func Note(kind, title, body string, tags ...string) Answer {
	if tags == nil {
		tags = []string{}
	}
	b, _ := json.Marshal(map[string]any{"kind": kind, "title": title, "body": body, "tags": tags})
	return Answer{Content: string(b)}
}

// None is the answer "nothing reusable".
var None = Answer{Content: `{"none": true}`}
