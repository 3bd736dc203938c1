package fakemodel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/fakemodel"
	"github.com/agentmemory/agentmemory/internal/llm/hashembed"
)

// The fake model drafts a note through internal/llm's own client, labelled as fake in its
// title, body and tags, and refuses to act as the gate's detector.
func TestFakeModelDraftsALabelledNoteAndRefusesToDetect(t *testing.T) {
	s, err := fakemodel.Start("127.0.0.1:0")
	require.NoError(t, err)
	defer s.Close()
	c, err := llm.New(llm.Config{Host: s.URL, Model: "llama3.2"})
	require.NoError(t, err)

	p, ok, err := c.Distill(context.Background(), []llm.Turn{{Speaker: "customer", Text: "wrong size"}, {Speaker: "agent", Text: "I start a return"}})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, fakemodel.Title, p.Title)
	require.Contains(t, p.Body, "fake model")
	require.Contains(t, p.Body, "counted 2 turns")
	require.Equal(t, []string{fakemodel.Tag}, p.Tags)
	require.NoError(t, llm.ValidateProposal(p))

	_, err = c.DetectKinds(context.Background(), "call Ana Souza")
	require.True(t, errors.Is(err, llm.ErrUnavailable), "err %v", err)
	require.True(t, strings.Contains(err.Error(), "501"), "err %v", err)
}

// The fake model answers /api/embed with hashembed's deterministic vectors.
func TestFakeModelEmbeds(t *testing.T) {
	s, err := fakemodel.Start("127.0.0.1:0")
	require.NoError(t, err)
	defer s.Close()
	c, err := llm.New(llm.Config{Host: s.URL, Model: "llama3.2"})
	require.NoError(t, err)
	vs, err := c.Embed(context.Background(), "nomic-embed-text", []string{"gift cards", "boots"})
	require.NoError(t, err)
	require.Len(t, vs, 2)
	require.Equal(t, hashembed.Vector("gift cards"), vs[0])
}
