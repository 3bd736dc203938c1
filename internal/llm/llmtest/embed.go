package llmtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/internal/llm/hashembed"
)

// EmbedServer is a fake Ollama server answering POST /api/embed with hashembed's
// deterministic vectors (similar texts are near). It can be made down (HTTP 503) or slow,
// and it records every request it received.
type EmbedServer struct {
	*httptest.Server

	mu       sync.Mutex
	down     bool
	delay    time.Duration
	requests []EmbedRequest
}

// EmbedRequest is what the server received in one /api/embed call.
type EmbedRequest struct {
	Model    string   `json:"model"`
	Input    []string `json:"input"`
	Truncate *bool    `json:"truncate"`
}

// NewEmbed starts an EmbedServer, closed when t ends.
func NewEmbed(t testing.TB) *EmbedServer {
	t.Helper()
	s := &EmbedServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// SetDown makes every later call answer 503 (true) or vectors again (false).
func (s *EmbedServer) SetDown(down bool) { s.mu.Lock(); s.down = down; s.mu.Unlock() }

// SetDelay makes every later call wait d before answering.
func (s *EmbedServer) SetDelay(d time.Duration) { s.mu.Lock(); s.delay = d; s.mu.Unlock() }

// Requests returns the received /api/embed requests, in order.
func (s *EmbedServer) Requests() []EmbedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]EmbedRequest(nil), s.requests...)
}

func (s *EmbedServer) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/embed" || r.Method != http.MethodPost {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	var req struct {
		Model    string          `json:"model"`
		Input    json.RawMessage `json:"input"`
		Truncate *bool           `json:"truncate"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	var in []string
	if json.Unmarshal(req.Input, &in) != nil {
		var one string
		if json.Unmarshal(req.Input, &one) != nil {
			http.Error(w, `{"error":"bad input"}`, http.StatusBadRequest)
			return
		}
		in = []string{one}
	}
	s.mu.Lock()
	s.requests = append(s.requests, EmbedRequest{Model: req.Model, Input: in, Truncate: req.Truncate})
	down, delay := s.down, s.delay
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if down {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"scripted failure"}`)) // a test server's answer: a caller gone away is the test's concern
		return
	}
	vs := make([][]float32, len(in))
	for i, t := range in {
		vs[i] = hashembed.Vector(t)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": vs}) // a test server's answer: a caller gone away is the test's concern
}
