package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/notes"
)

const proposalsPath = "/v1/agent-memory/proposals"

// AM-8, AM-10: with writes human_only an agent's write (new note or edit) is a pending
// proposal (202 {"proposal_id"}); admin or reviewer approve (edits pass the gate again) or
// reject; people's integration writes stay direct.
func TestNoteProposals(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, map[string]any{"writes": "human_only"})
		bot := writer(e, "shop-bot", "acme")
		reviewer := e.PersonKey("rita", "reviewer")
		integ := e.PersonKey("loader", "integration")

		r := e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Refund", "Ask for the order id first.", "tags", []string{"refund"}))
		pid := r.JSON(t)["proposal_id"].(string)
		require.Empty(t, listIDs(e, bot, ""), "nothing is a note before approval")

		list := e.MustDo(http.StatusOK, "GET", proposalsPath+"?status=pending", reviewer, nil).JSON(t)["proposals"]
		require.Equal(t, []string{pid}, ids(list))
		p := e.MustDo(http.StatusOK, "GET", proposalsPath+"/"+pid, reviewer, nil).JSON(t)
		require.Equal(t, "pending", p["status"])
		require.Equal(t, "Ask for the order id first.", p["note"].(map[string]any)["body"], "note holds the proposed fields")
		require.Nil(t, p["note_id"])
		require.Nil(t, p["last_error"])

		requireError(t, e.Do("POST", proposalsPath+"/"+pid+"/approve", bot, nil), 403, "role_required")
		requireError(t, e.Do("POST", proposalsPath+"/"+pid+"/approve", integ, nil), 403, "role_required")
		requireError(t, e.Do("POST", proposalsPath+"/"+pid+"/approve", reviewer, map[string]any{"edits": map[string]any{"body": "Mail ana@example.com"}}), 422, "personal_data_in_agent_memory")
		requireError(t, e.Do("POST", proposalsPath+"/"+pid+"/approve", reviewer, map[string]any{"edits": map[string]any{"kind": "diary"}}), 400, "invalid_member")
		require.Equal(t, "pending", e.MustDo(http.StatusOK, "GET", proposalsPath+"/"+pid, reviewer, nil).JSON(t)["status"], "a refused approval changes nothing")

		n := e.MustDo(http.StatusCreated, "POST", proposalsPath+"/"+pid+"/approve", reviewer, map[string]any{"edits": map[string]any{"title": "Refund: order id first"}}).JSON(t)
		require.Equal(t, "Refund: order id first", n["title"])
		require.Equal(t, "agent", n["origin"])
		require.Equal(t, "shop-bot", n["source_id"])
		require.Equal(t, pid, n["proposal_id"])
		p = e.MustDo(http.StatusOK, "GET", proposalsPath+"/"+pid, reviewer, nil).JSON(t)
		require.Equal(t, "approved", p["status"])
		require.Equal(t, n["id"], p["note_id"])
		require.NotNil(t, p["decided_at"])
		again := e.MustDo(http.StatusOK, "POST", proposalsPath+"/"+pid+"/approve", reviewer, map[string]any{"edits": map[string]any{"title": "Other"}}).JSON(t)
		require.Equal(t, n, again, "a repeated approve changes nothing and answers 200 with the same note")
		require.Len(t, receiptsOf(e, "proposal.approve"), 1)
		require.Equal(t, []string{n["id"].(string)}, listIDs(e, bot, ""))

		// An agent's edit is a proposal too; approving it makes the new version.
		r = e.MustDo(http.StatusAccepted, "POST", notesPath+"/"+n["id"].(string)+"/versions", bot, map[string]any{"body": "Ask for the order id, then the reason."})
		eid := r.JSON(t)["proposal_id"].(string)
		v2 := e.MustDo(http.StatusCreated, "POST", proposalsPath+"/"+eid+"/approve", e.AdminKey, nil).JSON(t)
		require.Equal(t, n["id"], v2["supersedes_note_id"])
		require.Equal(t, "retired", e.MustDo(http.StatusOK, "GET", notesPath+"/"+n["id"].(string), bot, nil).JSON(t)["status"])

		// Reject.
		r = e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Other", "Something."))
		rid := r.JSON(t)["proposal_id"].(string)
		rej := e.MustDo(http.StatusOK, "POST", proposalsPath+"/"+rid+"/reject", reviewer, map[string]any{"reason": "duplicate"}).JSON(t)
		require.Equal(t, "rejected", rej["status"])
		require.Equal(t, "duplicate", rej["reason"])
		requireError(t, e.Do("POST", proposalsPath+"/"+rid+"/approve", reviewer, nil), 409, "proposal_not_pending")
		requireError(t, e.Do("GET", proposalsPath+"/prop_nope", reviewer, nil), 404, "proposal_not_found")
		requireError(t, e.Do("GET", proposalsPath+"?status=maybe", reviewer, nil), 400, "invalid_member")

		// People with integration write directly.
		e.MustDo(http.StatusCreated, "POST", notesPath, integ, note("Direct", "Loaded by the company.", "source_id", "shop-bot"))

		// Reviewers approve only while the space grants it.
		enableNotes(e, map[string]any{"writes": "human_only", "reviewer_approves": false})
		r = e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Third", "Something else."))
		tid := r.JSON(t)["proposal_id"].(string)
		requireError(t, e.Do("POST", proposalsPath+"/"+tid+"/approve", reviewer, nil), 403, "role_required")
		e.MustDo(http.StatusCreated, "POST", proposalsPath+"/"+tid+"/approve", e.AdminKey, nil)
	})
}

// AM-8, AM-9: the store a distillation workflow drives: a drafting proposal is filled
// (pending) or failed with a reason; personal data fails it with reason personal_data.
func TestNoteProposalLifecycle(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		writer(e, "shop-bot", "acme")
		svc := e.Deps.Proposals
		ctx := t.Context()
		d := notesDraft(e)
		id, err := svc.Draft(ctx, d)
		require.NoError(t, err)
		reviewer := e.PersonKey("rita", "reviewer")
		p := e.MustDo(http.StatusOK, "GET", proposalsPath+"/"+id, reviewer, nil).JSON(t)
		require.Equal(t, "drafting", p["status"])
		require.Equal(t, "distilled", p["origin"])
		require.Nil(t, p["note"], "no proposed fields while drafting")
		require.Equal(t, map[string]any{"conversation_id": "conv-9"}, p["evidence"])
		requireError(t, e.Do("POST", proposalsPath+"/"+id+"/approve", reviewer, nil), 409, "proposal_not_pending")

		require.NoError(t, svc.MarkPending(ctx, id, distilled("Refunds", "Validate the purchase before a refund.")))
		n := e.MustDo(http.StatusCreated, "POST", proposalsPath+"/"+id+"/approve", reviewer, nil).JSON(t)
		require.Equal(t, "distilled", n["origin"])
		require.Equal(t, map[string]any{"conversation_id": "conv-9"}, n["evidence"])

		// The drafting gate's refusal (the workflow's Draft activity) fails the proposal with
		// the kinds found, never the values.
		id2, err := svc.Draft(ctx, d)
		require.NoError(t, err)
		call := distilled("Call back", "Call +44 20 7123 4567.")
		err = e.Deps.Notes.Check(ctx, e.SpaceID, notes.GateText(call.Title, call.Body, call.Tags, &d.Evidence))
		require.Equal(t, notes.CodePersonalData, fault.As(err).Code, "got %v", err)
		require.NoError(t, svc.MarkFailed(ctx, id2, "personal_data", fault.As(err).Details["kinds"].([]string)))
		p = e.MustDo(http.StatusOK, "GET", proposalsPath+"/"+id2, reviewer, nil).JSON(t)
		require.Equal(t, "failed", p["status"])
		require.Equal(t, "personal_data", p["reason"])
		require.Equal(t, []any{"phone"}, p["kinds"], "kinds, never values")
		require.Nil(t, p["note"])
		require.NotContains(t, string(e.MustDo(http.StatusOK, "GET", proposalsPath+"/"+id2, reviewer, nil).Body), "7123")

		id3, err := svc.Draft(ctx, d)
		require.NoError(t, err)
		require.NoError(t, svc.MarkFailed(ctx, id3, "no_turns", nil))
		require.Equal(t, "no_turns", e.MustDo(http.StatusOK, "GET", proposalsPath+"/"+id3, reviewer, nil).JSON(t)["reason"])
	})
}
