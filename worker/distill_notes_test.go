package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/turns/turnstest"
	"github.com/agentmemory/agentmemory/workflows"
)

// notesRig is the real product end to end: the API over one database with the proposal
// store beside the notes service (apptest's wiring), a worker whose activities use the same
// proposal store, the package's Temporal dev server and a fake model.
type notesRig struct {
	*apptest.Env
	model *llmtest.Server
	bot   string
}

// testDecisionWait is the rigs' api.Deps.DecisionWait (the shipped default is 5 s).
const testDecisionWait = 2 * time.Minute

func newNotesRig(t *testing.T, engine string, deps func(*api.Deps), answers ...llmtest.Answer) *notesRig {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the Temporal dev server")
	}
	tq := fmt.Sprintf("notes-%s-%d", engine, time.Now().UnixNano())
	e := apptest.New(t, engine, func(d *api.Deps) {
		d.Workflows, d.TaskQueue = temporalClient, tq
		// approve and reject answer 201/200 once the workflow has applied the decision, 202 if
		// it has not within DecisionWait. The tests assert the applied answer, so the wait is
		// far beyond any scheduling delay of a loaded machine (the answer comes as soon as the
		// workflow ends; only a lost decision would use it up).
		d.DecisionWait = testDecisionWait
		if deps != nil {
			deps(d)
		}
	})
	model := llmtest.New(t, answers...)
	mc, err := llm.New(llm.Config{Host: model.URL, Model: "distiller"})
	require.NoError(t, err)
	w := newWorker(t, e, app.WorkerOptions{TaskQueue: tq, Model: mc, NoReconcile: true})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
	r := &notesRig{Env: e, model: model, bot: e.AgentKey("support-bot", "acme", "context", "agent_memory")}
	return r
}

// distil ingests conversation i of the ABCD sample through POST /v1/turns and starts its
// distillation through the API; it returns the conversation and the proposal id.
func (r *notesRig) distil(t *testing.T, i int) (turnstest.Conversation, string) {
	t.Helper()
	conv := turnstest.Load(t)[i]
	r.MustDo(http.StatusCreated, "POST", "/v1/turns", r.bot, map[string]any{"turns": conv.Turns})
	resp := r.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/distill", r.AdminKey,
		map[string]any{"conversation_id": conv.ID, "source_id": "support-bot"})
	require.Equal(t, "drafting", resp.JSON(t)["status"])
	return conv, resp.JSON(t)["proposal_id"].(string)
}

// TestDistillThroughNotesAPI is the end-to-end path through the API alone: ingest an
// ABCD conversation, distil it, read the pending proposal, approve it with an edit through
// POST .../proposals/{id}/approve (which signals the waiting workflow with the edit's id
// only), approve again (the same note), and find the note in the block and the export with
// origin distilled and its evidence.
func TestDistillThroughNotesAPI(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			r := newNotesRig(t, engine, nil, goodNote)
			conv, id := r.distil(t, 0)

			prop := waitStatus(t, r.Env, id, "pending")
			note := prop["note"].(map[string]any)
			require.Equal(t, "Returns requested after 90 days", note["title"])
			require.Equal(t, "procedure", note["kind"])
			require.Equal(t, map[string]any{"conversation_id": conv.ID}, prop["evidence"])
			require.Nil(t, prop["note_id"])
			require.Nil(t, prop["last_error"])
			require.Equal(t, "distilled", prop["origin"])

			edited := "Returns after 90 days: escalate to a manager"
			resp := r.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/proposals/"+id+"/approve", r.AdminKey,
				map[string]any{"edits": map[string]any{"title": edited}})
			n := resp.JSON(t)
			require.Equal(t, edited, n["title"])
			require.Equal(t, "distilled", n["origin"])
			require.Equal(t, map[string]any{"conversation_id": conv.ID}, n["evidence"])
			require.Equal(t, id, n["proposal_id"])
			require.Equal(t, "support-bot", n["source_id"])
			require.Equal(t, "acme", n["vendor"])
			again := r.MustDo(http.StatusOK, "POST", "/v1/agent-memory/proposals/"+id+"/approve", r.AdminKey, map[string]any{}).JSON(t)
			require.Equal(t, n, again, "a repeated approve changes nothing and returns the same note")

			prop = r.MustDo(http.StatusOK, "GET", "/v1/agent-memory/proposals/"+id, r.AdminKey, nil).JSON(t)
			require.Equal(t, "approved", prop["status"])
			require.Equal(t, n["id"], prop["note_id"])
			require.NotNil(t, prop["decided_at"])

			st, done, err := workflows.AwaitOutcome(context.Background(), temporalClient, id, 30*time.Second)
			require.NoError(t, err)
			require.True(t, done)
			require.Equal(t, workflows.Status{Status: proposals.StatusApproved, NoteID: n["id"].(string)}, st)

			block := r.MustDo(http.StatusOK, "GET", "/v1/agent-memory/block?max_tokens=2000", r.bot, nil)
			require.Contains(t, string(block.Body), edited)
			require.Contains(t, block.JSON(t)["note_ids"], n["id"])
			export := r.MustDo(http.StatusOK, "GET", "/v1/agent-memory/export", r.AdminKey, nil)
			require.Contains(t, string(export.Body), `"origin":"distilled"`)
			require.Contains(t, string(export.Body), n["id"].(string))
			require.Equal(t, 1, r.model.Calls())

			// The history holds ids only: the edit reached the workflow as a decision id.
			hist, payloads := historyJSON(t, id)
			require.Contains(t, payloads, `"EditsID":"dec_`, "sanity: the signal's payload is searched")
			for _, s := range []string{edited, note["title"].(string), note["body"].(string), conv.ID, conv.Email} {
				require.NotContains(t, hist+payloads, s)
			}
		})
	}
}

// Decisions through the workflow: refused edits (422, still pending, nothing stored), a
// rejection with its reason, then approving a rejected proposal (409).
func TestDistillRejectThroughNotesAPI(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			r := newNotesRig(t, engine, nil, goodNote)
			_, id := r.distil(t, 0)
			waitStatus(t, r.Env, id, "pending")
			path := "/v1/agent-memory/proposals/" + id
			reviewer := r.PersonKey("rita", "reviewer")

			resp := r.Do("POST", path+"/approve", r.bot, nil)
			require.Equal(t, http.StatusForbidden, resp.Status, "an agent never approves: %s", resp.Body)
			resp = r.Do("POST", path+"/approve", reviewer, map[string]any{"edits": map[string]any{"body": "Mail ana@example.com first."}})
			require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "got %d: %s", resp.Status, resp.Body)
			require.Equal(t, "personal_data_in_agent_memory", resp.ErrorCode(t))
			require.NotContains(t, string(resp.Body), "ana@example.com")
			require.Equal(t, "pending", r.MustDo(http.StatusOK, "GET", path, reviewer, nil).JSON(t)["status"])

			rej := r.MustDo(http.StatusOK, "POST", path+"/reject", reviewer, map[string]any{"reason": "duplicate"}).JSON(t)
			require.Equal(t, "rejected", rej["status"])
			require.Equal(t, "duplicate", rej["reason"])
			require.NotNil(t, rej["note"], "the proposed fields stay readable")
			st, done, err := workflows.AwaitOutcome(context.Background(), temporalClient, id, 30*time.Second)
			require.NoError(t, err)
			require.True(t, done)
			require.Equal(t, proposals.StatusRejected, st.Status)

			resp = r.Do("POST", path+"/approve", reviewer, nil)
			require.Equal(t, http.StatusConflict, resp.Status, "got %d: %s", resp.Status, resp.Body)
			require.Equal(t, "proposal_not_pending", resp.ErrorCode(t))
			list := r.MustDo(http.StatusOK, "GET", "/v1/agent-memory/notes", r.AdminKey, nil).JSON(t)["notes"]
			require.Empty(t, list, "nothing was written")
			_, payloads := historyJSON(t, id)
			require.NotContains(t, payloads, "duplicate", "the reason stays out of the history")
		})
	}
}

// While the model server fails the proposal stays drafting with last_error visible and
// approving it is 409; when the model answers again it becomes pending.
func TestDistillDraftingWhileModelDownThroughNotesAPI(t *testing.T) {
	r := newNotesRig(t, "sqlite", nil, llmtest.Answer{Status: http.StatusServiceUnavailable})
	_, id := r.distil(t, 0)
	p := waitFor(t, r.Env, id, func(p map[string]any) bool { return p["last_error"] != nil })
	require.Equal(t, "drafting", p["status"])
	require.Equal(t, "model_unreachable", p["last_error"])
	require.Nil(t, p["note"])
	resp := r.Do("POST", "/v1/agent-memory/proposals/"+id+"/approve", r.AdminKey, nil)
	require.Equal(t, http.StatusConflict, resp.Status, "got %d: %s", resp.Status, resp.Body)
	require.Equal(t, "proposal_not_pending", resp.ErrorCode(t))

	r.model.Script(goodNote)
	p = waitStatus(t, r.Env, id, "pending")
	require.Nil(t, p["last_error"], "pending clears the last error")
}

// The workflow's approval deadline ends the proposal expired.
func TestDistillExpiresThroughNotesAPI(t *testing.T) {
	r := newNotesRig(t, "postgres", func(d *api.Deps) { d.ApprovalDeadline = time.Second }, goodNote)
	_, id := r.distil(t, 0)
	p := waitStatus(t, r.Env, id, "expired")
	require.Nil(t, p["note_id"])
	resp := r.Do("POST", "/v1/agent-memory/proposals/"+id+"/approve", r.AdminKey, nil)
	require.Equal(t, http.StatusConflict, resp.Status, "got %d: %s", resp.Status, resp.Body)
	st, done, err := workflows.AwaitOutcome(context.Background(), temporalClient, id, 30*time.Second)
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, proposals.StatusExpired, st.Status)
}

// waitStatus polls GET /v1/agent-memory/proposals/{id} (bounded) until it shows want.
func waitStatus(t *testing.T, e *apptest.Env, id, want string) map[string]any {
	t.Helper()
	return waitFor(t, e, id, func(p map[string]any) bool {
		status, _ := p["status"].(string)
		if status != want {
			require.True(t, status == "drafting" || status == "pending", "proposal ended %s (%v), want %s", status, p["reason"], want)
		}
		return status == want
	})
}

// waitFor polls GET /v1/agent-memory/proposals/{id} (bounded) until ok holds.
func waitFor(t *testing.T, e *apptest.Env, id string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		p := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/proposals/"+id, e.AdminKey, nil).JSON(t)
		if ok(p) {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("proposal %s: condition not met; last seen %s", id, strings.TrimSpace(fmt.Sprint(p)))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// A note the model returns with a NUL in its body breaks the answer's schema: it is retried
// as an unusable answer and ends failed model_error after the retries, never a database
// error retried for days.
func TestDistillModelNoteWithNULFailsModelError(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			r := newNotesRig(t, engine, nil, llmtest.Note("procedure", "Returns", "Ask for the order id.\x00 Then escalate.", "returns"))
			_, id := r.distil(t, 0)
			p := waitStatus(t, r.Env, id, "failed")
			require.Equal(t, activities.ReasonModelError, p["reason"])
			require.Equal(t, 3, r.model.Calls(), "an unusable answer is retried up to 3 attempts")
		})
	}
}

// Concurrent approvals of one distilled proposal: only the caller whose decision the
// workflow applied answers 201; a caller whose stored decision lost answers 409
// proposal_already_decided, or 200 with the note when its edits are the applied ones.
func TestDistillConcurrentApprovals(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			r := newNotesRig(t, engine, nil, goodNote)
			_, id := r.distil(t, 0)
			waitStatus(t, r.Env, id, "pending")

			titles := []string{"Returns: variant A", "Returns: variant B", "Returns: variant C"}
			const callers = 6 // two callers per variant
			answers := make([]apptest.Response, callers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					answers[i] = r.Do("POST", "/v1/agent-memory/proposals/"+id+"/approve", r.AdminKey,
						map[string]any{"edits": map[string]any{"title": titles[i%len(titles)]}})
				}()
			}
			close(start)
			wg.Wait()

			winner := -1
			for i, a := range answers {
				if a.Status == http.StatusCreated {
					require.Equal(t, -1, winner, "callers %d and %d both got 201", winner, i)
					winner = i
				}
			}
			require.NotEqual(t, -1, winner, "one caller gets 201: %v", answers)
			note := answers[winner].JSON(t)
			require.Equal(t, titles[winner%len(titles)], note["title"], "the 201 caller's edits are the note")
			for i, a := range answers {
				if i == winner {
					continue
				}
				switch a.Status {
				case http.StatusOK:
					require.Equal(t, note, a.JSON(t), "caller %d", i)
				case http.StatusConflict:
					require.Equal(t, "proposal_already_decided", a.JSON(t)["error"].(map[string]any)["code"], "caller %d: %s", i, a.Body)
					require.NotEqual(t, titles[winner%len(titles)], titles[i%len(titles)], "caller %d had the applied edits", i)
				default:
					t.Fatalf("caller %d: got %d %s, want 200 or 409", i, a.Status, a.Body)
				}
			}
			prop := r.MustDo(http.StatusOK, "GET", "/v1/agent-memory/proposals/"+id, r.AdminKey, nil).JSON(t)
			require.Equal(t, note["id"], prop["note_id"])
		})
	}
}

// The drafting gate reads a model note like every other write path (notes.GateText): an
// e-mail address split across title and body is found and the proposal ends failed
// personal_data at drafting.
func TestDistillGateCatchesValuesSplitAcrossFields(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			r := newNotesRig(t, engine, nil, llmtest.Note("procedure", "Refunds go to ana.split@", "example.com after the purchase is validated.", "refund"))
			_, id := r.distil(t, 0)
			p := waitStatus(t, r.Env, id, "failed")
			require.Equal(t, activities.ReasonPersonalData, p["reason"])
			require.Equal(t, []any{"email"}, p["kinds"])
			require.Nil(t, p["note"])
		})
	}
}

// GATE-2: a drafted note naming a person closes the proposal (failed, personal_data, kinds
// ["name"]) under the default refuse; under agent_memory.gate.names "review" it is a pending
// proposal like any other, since a person approves it.
func TestDistillNamesRefusedOrReviewed(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			draft := llmtest.Note("pitfall", "Callbacks", "Marisol Quintanilha prefers a call back after 6pm.", "callback")
			r := newNotesRig(t, engine, nil, draft, draft)
			_, id := r.distil(t, 0)
			p := waitStatus(t, r.Env, id, "failed")
			require.Equal(t, activities.ReasonPersonalData, p["reason"])
			require.Equal(t, []any{"name"}, p["kinds"])

			r.Env.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true, "gate": map[string]any{"names": "review"}}})
			_, id = r.distil(t, 1)
			p = waitStatus(t, r.Env, id, "pending")
			require.Equal(t, "Marisol Quintanilha prefers a call back after 6pm.", p["note"].(map[string]any)["body"])
		})
	}
}
