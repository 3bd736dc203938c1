package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// openApp wires the gate's model layer only when OLLAMA_HOST and AGENTMEMORY_DETECTOR_MODEL
// are both set, and always wires agent-note erasure, distillation and human_only writes to
// the proposals service beside notes.
func TestOpenAppWiresNotes(t *testing.T) {
	model := llmtest.New(t, llmtest.Answer{Content: `{"kinds": ["name"]}`})
	open := func(vars map[string]string) *app.App {
		vars["AGENTMEMORY_DATA_DIR"] = t.TempDir()
		cfg, err := config.Load(env(vars))
		require.NoError(t, err)
		a, err := openApp(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), true)
		require.NoError(t, err)
		t.Cleanup(a.Close)
		return a
	}

	a := open(map[string]string{"OLLAMA_HOST": model.URL})
	require.Nil(t, a.Notes.Detector, "no detector model named: local layer only")
	require.Same(t, a.Proposals, a.Compliance.Notes, "agent-note erasure erases notes and proposals")
	require.Same(t, a.Proposals, a.Server(nil).Proposals)
	require.Same(t, a.Notes, a.Proposals.Notes)
	// human_only writes become proposals sealed by notes (noterows.InsertProposal) and opened
	// by proposals: one key store.
	require.True(t, a.Notes.Keys == a.Proposals.Keys, "notes and proposals share the key store")

	a = open(map[string]string{"OLLAMA_HOST": model.URL, "AGENTMEMORY_DETECTOR_MODEL": "detector"})
	require.NotNil(t, a.Notes.Detector)
	space, _, err := spaces.Create(context.Background(), a.DB, "acme", time.Now())
	require.NoError(t, err)
	err = a.Notes.Check(context.Background(), space, "Crystal prefers a call back.")
	require.Equal(t, notes.CodePersonalData, fault.As(err).Code, "got %v", err)
	require.Equal(t, "detector", model.Requests()[0].Model)
}
