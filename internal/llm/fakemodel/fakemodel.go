// Package fakemodel is a built-in stand-in for an Ollama-API model server, for trying the
// distillation flow without a model (`agentmemory dev --fake-model`). It is never the default.
//
// It answers POST /api/chat (non-streaming, one JSON line, the shape internal/llm's client
// reads) with a fixed note that says in its title, body and tags that the fake model wrote
// it, and names itself as the model of every answer (Model). It does not read the
// conversation beyond counting its turns, and it refuses to act as the gate's personal-data
// detector (HTTP 501), so it can never let a note through the gate's model layer. It also
// answers POST /api/embed with internal/llm/hashembed's deterministic vectors (hashed words
// and trigrams, not a language model) so the knowledge walk-through runs (KN-2). Nothing is
// logged: requests hold turn and document text.
package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/agentmemory/agentmemory/internal/llm/hashembed"
)

// Model is the model name every answer carries.
const Model = "agentmemory-fake-model"

// Tag is the tag of every note the fake model drafts.
const Tag = "fake-model"

// Title is the title of every note the fake model drafts.
const Title = "[fake model] Example note, not written by a language model"

// Handler returns the fake server's HTTP handler: POST /api/chat, POST /api/embed,
// GET /api/version and GET /api/tags; anything else answers 404 {"error": "..."}.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat", chat)
	mux.HandleFunc("POST /api/embed", embed)
	mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"version": "0.0.0-fake"})
	})
	mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"models": []map[string]any{{"name": Model, "model": Model}}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "the fake model answers only /api/chat and /api/embed"})
	})
	return mux
}

type chatRequest struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Format json.RawMessage `json:"format"`
}

func chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "the fake model reads a JSON chat request"})
		return
	}
	// The detector's schema asks for "kinds"; the distiller's for a note.
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(req.Format, &schema) // no schema reads as the distiller's request
	if _, ok := schema.Properties["kinds"]; ok {
		writeJSON(w, http.StatusNotImplemented, map[string]any{"error": "the fake model does not detect personal data"})
		return
	}
	turns := 0
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for _, line := range strings.Split(m.Content, "\n") {
			if strings.HasPrefix(line, "customer: ") || strings.HasPrefix(line, "agent: ") || strings.HasPrefix(line, "system: ") {
				turns++
			}
		}
	}
	note, _ := json.Marshal(map[string]any{
		"kind":  "procedure",
		"title": Title,
		"body": fmt.Sprintf("This note comes from the fake model of agentmemory dev --fake-model, a stand-in "+
			"that does not read the conversation (it counted %d turns). It lets you try the flow: the "+
			"proposal, the approval and the note in the block. Start the service with OLLAMA_HOST "+
			"pointing at a real Ollama server to get notes a model wrote.", turns),
		"tags": []string{Tag},
	})
	line, _ := json.Marshal(map[string]any{
		"model": Model, "created_at": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"role": "assistant", "content": string(note)},
		"done":    true, "done_reason": "stop",
	})
	w.Header().Set("Content-Type", "application/x-ndjson")
	_, _ = w.Write(append(line, '\n')) // a caller that went away: nothing to tell it
}

// embed answers /api/embed: one hashembed vector per input (a string or a list of strings).
func embed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 32<<20)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "the fake model reads a JSON embed request"})
		return
	}
	var in []string
	if json.Unmarshal(req.Input, &in) != nil {
		var one string
		if json.Unmarshal(req.Input, &one) != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "input is a string or a list of strings"})
			return
		}
		in = []string{one}
	}
	vs := make([][]float32, len(in))
	for i, t := range in {
		vs[i] = hashembed.Vector(t)
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": Model, "embeddings": vs})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a caller that went away: nothing to tell it
}

// Server is a running fake model server.
type Server struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:41234 (for OLLAMA_HOST).
	URL string
	srv *http.Server
	// done is closed when Serve returns.
	done chan struct{}
}

// Start listens on addr (host:port; port 0 picks a free one) and serves Handler until Close.
func Start(addr string) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen on %s: %w", addr, err)
	}
	s := &Server{URL: "http://" + l.Addr().String(), srv: &http.Server{Handler: Handler(), ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		// Serve ends with http.ErrServerClosed on Close; any other end makes calls to URL fail
		// like an unreachable model.
		_ = s.srv.Serve(l)
	}()
	return s, nil
}

// Close stops the server, waiting up to 5 seconds for requests in flight.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
