// Package activities holds the side effects of the Temporal workflows: thin methods over the
// domain packages, the model client and the notes store. Their inputs and results are small
// id structs: no note text, turn text or personal data ever enters Temporal's history, which
// erasure cannot reach; each activity loads and writes the data itself.
package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/logs"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/turns"
)

// Failure reasons of a distillation (AM-9), recorded on the proposal.
const (
	ReasonNoTurns          = "no_turns"
	ReasonUnconfirmedLink  = "unconfirmed_link"
	ReasonModelError       = "model_error"
	ReasonNothingToPropose = "nothing_to_propose"
	ReasonPersonalData     = "personal_data"
	// ReasonInstruction: the proposed note reads as an instruction to its reader (GATE-3);
	// the proposal's kinds list the classes (override, privilege, exfiltration, invisible).
	ReasonInstruction = "instruction"
)

// Error types of Draft's application errors (Temporal retries by these).
const (
	// ErrTypeModelUnavailable: the model server did not answer; retried until the workflow's
	// model wait runs out.
	ErrTypeModelUnavailable = "ModelUnavailable"
	// ErrTypeBadAnswer: the model's answer was unusable; retried up to MaxBadAnswers attempts.
	ErrTypeBadAnswer = "BadModelAnswer"
	// ErrTypeModelError: the model kept answering badly; final (not retried).
	ErrTypeModelError = "ModelError"
)

// Last-error codes a drafting proposal shows while the workflow retries.
const (
	LastErrorModelUnreachable = "model_unreachable"
	LastErrorBadAnswer        = "model_bad_answer"
)

// ApproveOutcome is what Approve did: NoteID of the written (or, for a repeated approve,
// already written) note; or, when the approval was refused and the proposal stays pending,
// RefusedCode (e.g. personal_data_in_agent_memory, note_cap_reached) and, for personal data,
// the kinds the gate found in the edits. It is a workflow payload: its shape stays.
type ApproveOutcome struct {
	NoteID       string
	RefusedKinds []string
	RefusedCode  string `json:",omitempty"`
}

// Refused reports whether the approval was refused (the proposal stays pending).
func (o ApproveOutcome) Refused() bool { return len(o.RefusedKinds) > 0 || o.RefusedCode != "" }

// Model distils a note from masked turns (internal/llm.Client).
type Model interface {
	Distill(ctx context.Context, turns []llm.Turn) (llm.Proposal, bool, error)
}

// TurnReader reads a conversation's masked turns and identity links (internal/turns.Service).
type TurnReader interface {
	Recent(ctx context.Context, spaceID, kind, id string, since time.Time) ([]turns.Stored, error)
	LinkStatus(ctx context.Context, spaceID, kind, id string) (turns.Links, error)
}

// Activities holds the dependencies of every activity. Workflows call its methods through a
// nil *Activities; the worker registers a wired one. Proposals is the proposal lifecycle
// (internal/proposals), whose methods the activities call directly; every one is idempotent
// (an activity may run more than once) and takes the proposal's id only. Its Notes gives the
// personal-data gate.
type Activities struct {
	Turns     TurnReader
	Model     Model
	Proposals *proposals.Service
	// Now is the clock of the 90-day window; nil means time.Now.
	Now func() time.Time
	// MaxBadAnswers is the attempt after which an unusable model answer is final
	// (model_error); 0 means 3.
	MaxBadAnswers int32
	// HeartbeatEvery is how often Draft heartbeats while it waits for the model
	// (DefaultHeartbeatEvery when zero or less): with the workflow's heartbeat timeout
	// (workflows.DraftHeartbeatTimeout) a lost worker is noticed in seconds, not after the
	// 5-minute StartToClose timeout (issue 11 §3).
	HeartbeatEvery time.Duration
	// ModelOutage logs the model server's outages once, then as a periodic summary, and its
	// recovery (nil: not logged). Draft's ModelUnavailable error is benign to Temporal, so
	// the SDK no longer logs an ERROR line per retry (issue 27).
	ModelOutage *logs.Outage
}

// DefaultHeartbeatEvery is Draft's heartbeat period while it waits for the model.
const DefaultHeartbeatEvery = 5 * time.Second

// ModelWait is the detail of Draft's heartbeats: how many heartbeats it sent while waiting
// for the model's answer (a count, nothing from the conversation).
type ModelWait struct {
	Beats int
}

// ProposalRef names a proposal: the only thing most activities take.
type ProposalRef struct {
	ProposalID string
}

// CheckResult is CheckTurns' answer: Turns counted in the window, and Reason set
// (no_turns, unconfirmed_link) when the distillation must stop.
type CheckResult struct {
	Turns  int
	Reason string
}

// DraftResult is Draft's answer: Outcome is pending, nothing_to_propose, personal_data
// (then Kinds lists the kinds found, never the values) or instruction (then Kinds lists
// the instruction classes).
type DraftResult struct {
	Outcome string
	Kinds   []string
}

// FailInput asks to end a proposal failed with Reason (and Kinds for personal_data).
type FailInput struct {
	ProposalID string
	Reason     string
	Kinds      []string
}

// DecisionInput is an approval or rejection: the deciding key's id and the id under which
// the API stored the decision (an approval's edits, a rejection's reason; "" for none).
type DecisionInput struct {
	ProposalID string
	EditsID    string
	ByKeyID    string
}

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// load returns the proposal's space and evidence and the kind and id of its scope.
func (a *Activities) load(ctx context.Context, proposalID string) (string, notes.Evidence, string, string, error) {
	space, ev, err := a.distillation(ctx, proposalID)
	if err != nil {
		return "", ev, "", "", keep("activities: load proposal", err)
	}
	if ev.TaskID != "" {
		return space, ev, "task", ev.TaskID, nil
	}
	if ev.ConversationID == "" {
		return space, ev, "", "", temporal.NewNonRetryableApplicationError("the proposal names no conversation or task", "BadProposal", nil)
	}
	return space, ev, "conversation", ev.ConversationID, nil
}

// CheckTurns counts the conversation's masked turns of the last 90 days (UTC) and checks its
// identity links: no turns gives no_turns; a conversation tied to its subject only through
// unconfirmed links gives unconfirmed_link (the model is then never called).
func (a *Activities) CheckTurns(ctx context.Context, in ProposalRef) (CheckResult, error) {
	space, _, kind, id, err := a.load(ctx, in.ProposalID)
	if err != nil {
		return CheckResult{}, err
	}
	links, err := a.Turns.LinkStatus(ctx, space, kind, id)
	if err != nil {
		return CheckResult{}, err
	}
	list, err := a.Turns.Recent(ctx, space, kind, id, a.now().UTC().Add(-turns.Window))
	if err != nil {
		return CheckResult{}, err
	}
	res := CheckResult{Turns: len(list)}
	switch {
	case len(list) == 0:
		res.Reason = ReasonNoTurns
	case links.OnlyUnconfirmed():
		res.Reason = ReasonUnconfirmedLink
	}
	return res, nil
}

// Draft asks the model for one note from the conversation's masked turns, passes it through
// the notes gate (personal data, then instructions: GATE-3) and, when it passes, stores it and makes the proposal pending.
// A model server that does not answer is a retryable ModelUnavailable error (the proposal's
// last error says model_unreachable); an unusable answer is a retryable BadModelAnswer error
// until attempt MaxBadAnswers, then a final ModelError.
func (a *Activities) Draft(ctx context.Context, in ProposalRef) (DraftResult, error) {
	space, ev, kind, id, err := a.load(ctx, in.ProposalID)
	if err != nil {
		return DraftResult{}, err
	}
	list, err := a.Turns.Recent(ctx, space, kind, id, a.now().UTC().Add(-turns.Window))
	if err != nil {
		return DraftResult{}, err
	}
	if len(list) == 0 {
		return DraftResult{Outcome: ReasonNoTurns}, nil
	}
	mt := make([]llm.Turn, len(list))
	for i, t := range list {
		mt[i] = llm.Turn{Speaker: t.Speaker, Text: t.Text}
	}
	p, ok, err := a.distill(ctx, mt)
	if err == nil || errors.Is(err, llm.ErrBadAnswer) {
		a.ModelOutage.Success() // the model answered, usable or not
	}
	switch {
	case errors.Is(err, llm.ErrBadAnswer):
		return DraftResult{}, a.badAnswer(ctx, in.ProposalID)
	case err != nil:
		_ = a.Proposals.SetLastError(ctx, in.ProposalID, LastErrorModelUnreachable) // the note on the proposal is for the reviewer; the retry below is what recovers
		return DraftResult{}, a.modelUnreachable(ctx)
	case !ok:
		return DraftResult{Outcome: ReasonNothingToPropose}, nil
	}
	// The same gate as every other write path (REST, MCP): a value split across title and
	// body is caught, and so is a note that reads as an instruction to its reader.
	note := p
	reason, kinds, err := a.check(ctx, space, note, &ev)
	if err != nil {
		return DraftResult{}, fmt.Errorf("activities: gate: %w", err)
	}
	if reason != "" {
		return DraftResult{Outcome: reason, Kinds: kinds}, nil
	}
	if err := a.Proposals.MarkPending(ctx, in.ProposalID, note); err != nil {
		if fault.IsCode(err, CodeInvalidNote) {
			// A note outside AM-1's limits (e.g. a control character in its body) breaks the
			// answer's schema: the model's fault, never a store error to retry forever.
			return DraftResult{}, a.badAnswer(ctx, in.ProposalID)
		}
		return DraftResult{}, keep("activities: mark pending", storeError(err))
	}
	return DraftResult{Outcome: proposals.StatusPending}, nil
}

// distill asks the model, heartbeating (ModelWait) right away and then every HeartbeatEvery
// until the answer comes. When Temporal cancels the activity (its heartbeat timed out on the
// server, the workflow was cancelled) ctx ends and so does the model call.
func (a *Activities) distill(ctx context.Context, mt []llm.Turn) (llm.Proposal, bool, error) {
	every := a.HeartbeatEvery
	if every <= 0 {
		every = DefaultHeartbeatEvery
	}
	type answer struct {
		p   llm.Proposal
		ok  bool
		err error
	}
	done := make(chan answer, 1)
	go func() {
		p, ok, err := a.Model.Distill(ctx, mt)
		done <- answer{p, ok, err}
	}()
	beats := 1
	activity.RecordHeartbeat(ctx, ModelWait{Beats: beats})
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case r := <-done:
			return r.p, r.ok, r.err
		case <-t.C:
			beats++
			activity.RecordHeartbeat(ctx, ModelWait{Beats: beats})
		}
	}
}

// CodeInvalidNote is the fault code of proposals.Service.MarkPending refusing the proposed
// note as invalid (the notes validation's fault.Invalid invalid_member).
const CodeInvalidNote = "invalid_member"

// badAnswer is the error of an unusable model answer: a retryable BadModelAnswer until
// attempt MaxBadAnswers, then a final ModelError.
func (a *Activities) badAnswer(ctx context.Context, proposalID string) error {
	maxBad := a.MaxBadAnswers
	if maxBad <= 0 {
		maxBad = 3
	}
	if activity.GetInfo(ctx).Attempt >= maxBad {
		return temporal.NewNonRetryableApplicationError("the model's answers were unusable", ErrTypeModelError, nil)
	}
	_ = a.Proposals.SetLastError(ctx, proposalID, LastErrorBadAnswer) // the note on the proposal is for the reviewer; the retry below is what recovers
	return temporal.NewApplicationError("the model's answer was unusable", ErrTypeBadAnswer)
}

// Fail ends the proposal failed with the input's reason (and kinds).
func (a *Activities) Fail(ctx context.Context, in FailInput) error {
	return storeError(a.Proposals.MarkFailed(ctx, in.ProposalID, in.Reason, in.Kinds))
}

// Approve writes the approved note (the edits of staged decision in.EditsID, gated again)
// and returns its id, or the refusal when the gate or the cap refused (the proposal stays
// pending). Approving an approved proposal returns its note and changes nothing.
func (a *Activities) Approve(ctx context.Context, in DecisionInput) (ApproveOutcome, error) {
	out, err := a.Proposals.ApplyApproval(ctx, in.ProposalID, in.EditsID, in.ByKeyID)
	if err != nil {
		return ApproveOutcome{}, storeError(err)
	}
	return ApproveOutcome{NoteID: out.NoteID, RefusedKinds: out.RefusedKinds, RefusedCode: out.RefusedCode}, nil
}

// Reject ends the proposal rejected (with the reason of staged decision in.EditsID).
func (a *Activities) Reject(ctx context.Context, in DecisionInput) error {
	return storeError(a.Proposals.ApplyRejection(ctx, in.ProposalID, in.EditsID, in.ByKeyID))
}

// Expire ends the proposal expired (its approval deadline passed); one no longer pending is
// left as it is.
func (a *Activities) Expire(ctx context.Context, in ProposalRef) error {
	return storeError(a.Proposals.Expire(ctx, in.ProposalID))
}

// modelUnreachable is Draft's retryable error while the model server does not answer,
// reported to ModelOutage (the first failure of an outage is an ERROR line, then a summary
// at most every logs.DefaultOutageEvery) and marked benign, so that the Temporal SDK logs no
// line of its own for each retry. The workflow still sees its type, ModelUnavailable.
func (a *Activities) modelUnreachable(ctx context.Context) error {
	attrs := []any{"code", LastErrorModelUnreachable}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		attrs = append(attrs, "ActivityType", info.ActivityType.Name, "Attempt", info.Attempt)
	}
	a.ModelOutage.Failure(attrs...)
	return temporal.NewApplicationErrorWithOptions("the model server did not answer", ErrTypeModelUnavailable,
		temporal.ApplicationErrorOptions{Category: temporal.ApplicationErrorCategoryBenign})
}
