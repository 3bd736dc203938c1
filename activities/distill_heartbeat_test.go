package activities_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/models"
)

// blockedModel answers only once released (or when its call's context ends).
type blockedModel struct{ release chan struct{} }

func (m blockedModel) Distill(ctx context.Context, _ []llm.Turn) (llm.Proposal, bool, error) {
	select {
	case <-m.release:
		return llm.Proposal{Kind: "procedure", Title: "Returns", Body: "Check the order date first."}, true, nil
	case <-ctx.Done():
		return llm.Proposal{}, false, ctx.Err()
	}
}

type oneTurn struct{}

func (oneTurn) Recent(context.Context, string, string, string, time.Time) ([]turns.Stored, error) {
	return []turns.Stored{{Speaker: "user", Text: "How do I return an order?", At: time.Now()}}, nil
}

func (oneTurn) LinkStatus(context.Context, string, string, string) (turns.Links, error) {
	return turns.Links{}, nil
}

// drafting is a real proposal store (SQLite) with agent memory on and one drafting
// distilled proposal; it returns the store and the proposal's id.
func drafting(t *testing.T) (*proposals.Service, string) {
	t.Helper()
	e := apptest.New(t, "sqlite")
	e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
	e.AgentKey("support-bot", "acme", "agent_memory")
	admin, err := auth.Authenticate(context.Background(), e.DB, e.AdminKey)
	require.NoError(t, err)
	id, err := e.Deps.Proposals.CreateDistillProposal(context.Background(), admin, turns.Scope{ConversationID: "c-1"}, "support-bot")
	require.NoError(t, err)
	return e.Deps.Proposals, id
}

// Issue 11 §3: Draft heartbeats while it waits for the model, so that a lost worker is noticed
// by the heartbeat timeout instead of the 5-minute StartToClose timeout. The model here answers
// only after a heartbeat has been recorded: without heartbeats the call would never return.
func TestDraftHeartbeatsWhileWaitingForTheModel(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	release := make(chan struct{})
	var once sync.Once
	var beats []activities.ModelWait
	var mu sync.Mutex
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var w activities.ModelWait
		if err := details.Get(&w); err != nil {
			w.Beats = -1 // undecodable details fail the check below
		}
		mu.Lock()
		beats = append(beats, w)
		mu.Unlock()
		once.Do(func() { close(release) })
	})
	store, id := drafting(t)
	env.RegisterActivity(&activities.Activities{
		Turns: oneTurn{}, Model: blockedModel{release: release}, Proposals: store,
		HeartbeatEvery: 10 * time.Millisecond,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		// Safety net: a Draft that never heartbeats would block forever.
		<-ctx.Done()
		once.Do(func() { close(release) })
	}()
	val, err := env.ExecuteActivity((&activities.Activities{}).Draft, activities.ProposalRef{ProposalID: id})
	require.NoError(t, err)
	var res activities.DraftResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, proposals.StatusPending, res.Outcome)
	require.NoError(t, ctx.Err(), "the model was released by a heartbeat, not by the safety net")
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, beats)
	require.Equal(t, 1, beats[0].Beats)
	var status string
	require.NoError(t, store.DB.NewSelect().Model((*models.NoteProposal)(nil)).Column("status").Where("id = ?", id).Scan(context.Background(), &status))
	require.Equal(t, "pending", status, "the drafted note was stored")
}
