package worker_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	sdkworker "go.temporal.io/sdk/worker"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/protobuf/encoding/protojson"

	historypb "go.temporal.io/api/history/v1"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/internal/turns/turnstest"
	"github.com/agentmemory/agentmemory/workflows"
)

// One Temporal dev server for the package (starting and stopping one takes about a second).
var temporalClient client.Client

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	testingShort := false
	for _, a := range os.Args {
		if a == "-test.short=true" || a == "-test.short" {
			testingShort = true
		}
	}
	if testingShort {
		return m.Run()
	}
	path, err := temporalCLI()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{
		ExistingPath: path, LogLevel: "error",
		ClientOptions: &client.Options{Logger: quietLogger{}},
		Stdout:        devNull(), Stderr: devNull(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the Temporal dev server:", err)
		return 1
	}
	defer srv.Stop() //nolint:errcheck
	temporalClient = srv.Client()
	return m.Run()
}

func devNull() *os.File {
	f, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	return f
}

// temporalCLI finds the Temporal CLI: bin/temporal at the repository root (make temporal
// installs it there), then PATH.
func temporalCLI() (string, error) {
	if p, err := filepath.Abs(filepath.Join("..", "bin", "temporal")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	return "", errors.New("the Temporal CLI is missing: run `make temporal` (it installs ./bin/temporal)")
}

type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

// newWorker is e's worker (app.NewWorker) with o, on a client sharing the dev server's
// connection with e's logger and metrics; it is not started.
func newWorker(t *testing.T, e *apptest.Env, o app.WorkerOptions) sdkworker.Worker {
	t.Helper()
	tc, err := e.App.ShareClient(temporalClient)
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	w, err := e.App.NewWorker(tc, o)
	require.NoError(t, err)
	return w
}

// rig is the API over one database with the real proposal store (apptest's wiring), a
// worker on its own task queue whose activities use the same store, and a fake model
// server. Agent memory is on and support-bot is an agent of the space.
type rig struct {
	*apptest.Env
	model     *llmtest.Server
	taskQueue string
	admin     auth.Principal
}

func newRig(t *testing.T, engine string, answers ...llmtest.Answer) *rig {
	if testing.Short() {
		t.Skip("needs the Temporal dev server")
	}
	r := &rig{model: llmtest.New(t, answers...),
		taskQueue: fmt.Sprintf("test-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())}
	r.Env = apptest.New(t, engine, func(d *api.Deps) {
		d.Workflows, d.TaskQueue = temporalClient, r.taskQueue
	})
	model, err := llm.New(llm.Config{Host: r.model.URL, Model: "distiller"})
	require.NoError(t, err)
	w := newWorker(t, r.Env, app.WorkerOptions{TaskQueue: r.taskQueue, Model: model, NoReconcile: true})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	r.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
	r.AgentKey("support-bot", "acme", "agent_memory")
	r.admin, err = auth.Authenticate(context.Background(), r.DB, r.AdminKey)
	require.NoError(t, err)
	return r
}

// await polls the stored proposal (bounded) until it shows want and returns it; it fails
// when the proposal ends in another status. seen, when not nil, collects every last_error
// it read on the way.
func (r *rig) await(t *testing.T, id, want string, seen ...*[]string) proposals.Proposal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		p, err := r.Deps.Proposals.Get(ctx, r.admin, id)
		require.NoError(t, err)
		if p.LastError != nil && len(seen) > 0 {
			*seen[0] = append(*seen[0], *p.LastError)
		}
		if p.Status == want {
			return p
		}
		if p.Status != proposals.StatusDrafting && p.Status != proposals.StatusPending {
			require.Equal(t, want, p.Status, "proposal ended %s (%v)", p.Status, p.Reason)
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("proposal %s: still %s, want %s", id, p.Status, want)
		}
	}
}

// ingest posts a conversation's turns through POST /v1/turns with an agent key of scope context.
func (r *rig) ingest(t *testing.T, conv turnstest.Conversation) []string {
	key := r.AgentKey("support-bot", "acme", "context")
	resp := r.MustDo(http.StatusCreated, "POST", "/v1/turns", key, map[string]any{"turns": conv.Turns})
	var masked []string
	for _, tv := range resp.JSON(t)["turns"].([]any) {
		masked = append(masked, tv.(map[string]any)["text"].(string))
	}
	return masked
}

// distill starts a distillation through the API and returns the proposal id.
func (r *rig) distill(t *testing.T, convID string) string {
	resp := r.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/distill", r.AdminKey, map[string]any{"conversation_id": convID, "source_id": "support-bot"})
	body := resp.JSON(t)
	require.Equal(t, "drafting", body["status"])
	return body["proposal_id"].(string)
}

var goodNote = llmtest.Note("procedure", "Returns requested after 90 days",
	"Ask for the username, e-mail address and order id to validate the purchase. If it was made more than 90 days ago the return cannot be accepted: say so, and offer to escalate to a manager, who will call back.",
	"returns", "orders")

func TestDistillABCDApproved(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			r := newRig(t, engine, goodNote)
			conv := turnstest.Load(t)[0]
			integ := r.PersonKey("crm", "integration")
			r.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{
				"name": conv.Name, "handles": []string{"email:" + conv.Email, "username:" + conv.Username},
			})
			r.MustDo(http.StatusCreated, "POST", "/v1/identity-links", integ, map[string]any{
				"conversation_id": conv.ID, "subject": "email:" + conv.Email, "status": "confirmed",
			})
			masked := r.ingest(t, conv)
			id := r.distill(t, conv.ID)

			p := r.await(t, id, "pending")
			require.Equal(t, "Returns requested after 90 days", p.Note.Title)
			require.Equal(t, 1, r.model.Calls())
			// The model saw the masked turns only.
			prompt := r.model.Requests()[0].Messages[1].Content
			for _, pii := range []string{conv.Email, conv.Phone, "Crystal Minh", conv.Username} {
				require.NotContains(t, prompt, pii, "the model must see masked turns only")
			}
			require.Contains(t, prompt, masked[len(masked)-1])

			ctx := context.Background()
			require.NoError(t, workflows.SendApproval(ctx, temporalClient, id, workflows.Approval{Decision: proposals.DecisionApprove, ByKeyID: "key_reviewer"}))
			st, done, err := workflows.AwaitOutcome(ctx, temporalClient, id, 60*time.Second)
			require.NoError(t, err)
			require.True(t, done)
			require.Equal(t, proposals.StatusApproved, st.Status)
			require.NotEmpty(t, st.NoteID)
			n, err := r.Deps.Notes.Stored(ctx, r.SpaceID, st.NoteID)
			require.NoError(t, err)
			require.Equal(t, "distilled", n.Origin)
			require.Equal(t, conv.ID, n.Evidence.ConversationID)
			require.Equal(t, id, *n.ProposalID)

			// A repeated approve finds the workflow closed; a repeated start is refused.
			err = workflows.SendApproval(ctx, temporalClient, id, workflows.Approval{Decision: proposals.DecisionApprove, ByKeyID: "key_reviewer"})
			var nf *serviceerror.NotFound
			require.ErrorAs(t, err, &nf, "got %v, want NotFound for a closed workflow", err)
			err = workflows.StartDistill(ctx, temporalClient, r.taskQueue, workflows.DistillInput{ProposalID: id})
			var started *serviceerror.WorkflowExecutionAlreadyStarted
			require.ErrorAs(t, err, &started, "got %v, want WorkflowExecutionAlreadyStarted", err)

			// Temporal's history holds ids only: no turn text, no note text, no personal data.
			hist, payloads := historyJSON(t, id)
			require.Contains(t, payloads, `"ProposalID":"`+id+`"`, "sanity: the decoded payloads are searched")
			require.Contains(t, payloads, `"Decision":"approve"`, "sanity: the signal's payload is searched")
			hist += payloads
			for _, text := range masked {
				if len(text) >= 12 {
					require.NotContains(t, hist, text, "turn text in the workflow history")
				}
			}
			for _, tt := range conv.Turns {
				if len(tt.Text) >= 12 {
					require.NotContains(t, hist, tt.Text, "raw turn text in the workflow history")
				}
			}
			for _, s := range []string{p.Note.Title, p.Note.Body, conv.Email, conv.Phone, conv.ID, "Crystal Minh"} {
				require.NotContains(t, hist, s)
			}
			if engine == "sqlite" && os.Getenv("AGENTMEMORY_RECORD_HISTORY") != "" {
				raw, _ := historyJSON(t, id)
				require.NoError(t, os.WriteFile(filepath.Join("..", "workflows", "testdata", "distill_approved.json"), []byte(raw), 0o644))
			}
		})
	}
}

// historyJSON returns the distillation workflow's whole history of proposalID as protojson,
// and the text of every payload in it decoded and joined (workflowHistory).
func historyJSON(t *testing.T, proposalID string) (string, string) {
	t.Helper()
	return workflowHistory(t, workflows.DistillID(proposalID))
}

// workflowHistory returns workflow workflowID's whole history as protojson, and the text of
// every payload in it (protojson shows payload data in base64) decoded and joined.
func workflowHistory(t *testing.T, workflowID string) (string, string) {
	t.Helper()
	it := temporalClient.GetWorkflowHistory(context.Background(), workflowID, "", false, 0)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	var payloads strings.Builder
	for _, m := range payloadData.FindAllStringSubmatch(string(data), -1) {
		dec, err := base64.StdEncoding.DecodeString(m[1])
		require.NoError(t, err)
		payloads.Write(dec)
		payloads.WriteByte('\n')
	}
	return string(data), payloads.String()
}

var payloadData = regexp.MustCompile(`"data":\s*"([A-Za-z0-9+/=]*)"`) // protojson varies its spacing

func TestDistillRefusesPersonalDataFromTheModel(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			r := newRig(t, engine, llmtest.Note("procedure", "Returns", "Write to cminh730@email.com to confirm the return.", "returns"))
			conv := turnstest.Load(t)[0]
			r.ingest(t, conv)
			id := r.distill(t, conv.ID)
			p := r.await(t, id, "failed")
			require.Equal(t, activities.ReasonPersonalData, *p.Reason)
			require.Equal(t, []string{"email"}, p.Kinds)
			require.Nil(t, p.Note, "a refused note is not stored")
		})
	}
}

func TestDistillUnconfirmedLinkNeverCallsTheModel(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			r := newRig(t, engine, goodNote)
			conv := turnstest.Load(t)[1]
			r.ingest(t, conv)
			r.MustDo(http.StatusCreated, "POST", "/v1/identity-links", r.AdminKey, map[string]any{
				"conversation_id": conv.ID, "subject": "email:" + conv.Email, "status": "unconfirmed",
			})
			id := r.distill(t, conv.ID)
			p := r.await(t, id, "failed")
			require.Equal(t, activities.ReasonUnconfirmedLink, *p.Reason)
			require.Zero(t, r.model.Calls(), "the model must never be called")
		})
	}
}

// AM-9: a conversation reaching one subject through a confirmed link and another only
// through an unconfirmed link still never reaches the model.
func TestDistillUnconfirmedLinkBesideAConfirmedOneNeverCallsTheModel(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			r := newRig(t, engine, goodNote)
			conv := turnstest.Load(t)[1]
			r.ingest(t, conv)
			r.MustDo(http.StatusCreated, "POST", "/v1/identity-links", r.AdminKey, map[string]any{
				"conversation_id": conv.ID, "subject": "email:" + conv.Email, "status": "confirmed",
			})
			r.MustDo(http.StatusCreated, "POST", "/v1/identity-links", r.AdminKey, map[string]any{
				"conversation_id": conv.ID, "subject": "email:someone.else@example.com", "status": "unconfirmed",
			})
			id := r.distill(t, conv.ID)
			p := r.await(t, id, "failed")
			require.Equal(t, activities.ReasonUnconfirmedLink, *p.Reason)
			require.Zero(t, r.model.Calls(), "the model must never be called")
		})
	}
}

func TestDistillNoTurns(t *testing.T) {
	r := newRig(t, "sqlite", goodNote)
	id := r.distill(t, "conversation-without-turns")
	p := r.await(t, id, "failed")
	require.Equal(t, activities.ReasonNoTurns, *p.Reason)
	require.Zero(t, r.model.Calls())
}

func TestDistillNothingToPropose(t *testing.T) {
	r := newRig(t, "sqlite", llmtest.None)
	conv := turnstest.Load(t)[2]
	r.ingest(t, conv)
	p := r.await(t, r.distill(t, conv.ID), "failed")
	require.Equal(t, activities.ReasonNothingToPropose, *p.Reason)
}

func TestDistillModelErrorAfterRetries(t *testing.T) {
	r := newRig(t, "postgres", llmtest.Answer{Content: "{}"})
	conv := turnstest.Load(t)[2]
	r.ingest(t, conv)
	id, err := r.Deps.Proposals.CreateDistillProposal(context.Background(), r.admin, turns.Scope{ConversationID: conv.ID}, "support-bot")
	require.NoError(t, err)
	require.NoError(t, workflows.StartDistill(context.Background(), temporalClient, r.taskQueue,
		workflows.DistillInput{ProposalID: id, RetryInterval: 50 * time.Millisecond}))
	p := r.await(t, id, "failed")
	require.Equal(t, activities.ReasonModelError, *p.Reason)
	require.Equal(t, 3, r.model.Calls(), "an unusable answer is retried up to 3 attempts")
}

func TestDistillWaitsWhileTheModelIsDown(t *testing.T) {
	r := newRig(t, "sqlite", llmtest.Answer{Status: http.StatusServiceUnavailable}, llmtest.Answer{Status: http.StatusServiceUnavailable}, llmtest.Answer{Status: http.StatusBadGateway}, goodNote)
	conv := turnstest.Load(t)[0]
	r.ingest(t, conv)
	id, err := r.Deps.Proposals.CreateDistillProposal(context.Background(), r.admin, turns.Scope{ConversationID: conv.ID}, "support-bot")
	require.NoError(t, err)
	require.NoError(t, workflows.StartDistill(context.Background(), temporalClient, r.taskQueue,
		workflows.DistillInput{ProposalID: id, RetryInterval: 50 * time.Millisecond}))
	var seen []string
	p := r.await(t, id, "pending", &seen)
	require.Nil(t, p.LastError, "pending clears the last error")
	require.Equal(t, 4, r.model.Calls())
	require.NotEmpty(t, seen, "the last error showed while the model was down")
	for _, code := range seen {
		require.Equal(t, "model_unreachable", code)
	}
}
