package promptctx

import (
	"context"
	"errors"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/runs"
)

// inRun cuts answer a, composed within the call's own max_tokens from cn and ret, to the run
// (CTX-3): it reserves min(a's total, what the run has left) and, when it got less, builds the
// answer again within what it got, as a call with that max_tokens would be built (the block
// within min(block_max_tokens, it), then the task section, then the evidence; whole notes
// and chunks only). Less than MinTokens, or an answer with nothing in it while a had
// something: BudgetExhausted, every part empty. It returns the answer, the notes it holds and
// the draw, still to settle.
func (s *Service) inRun(ctx context.Context, p auth.Principal, req Request, cn notes.ContextNotes, ret knowledge.Retrieval, a Answer) (Answer, notes.ContextNotes, *runs.Draw, error) {
	if s.Runs == nil {
		return Answer{}, cn, nil, errors.New("promptctx: a run was named but the service has no run store")
	}
	d, err := s.Runs.Begin(p, req.Run)
	if err != nil {
		return Answer{}, cn, nil, err
	}
	full := a.Tokens.Total
	room, err := d.Reserve(ctx, full)
	if err != nil {
		return Answer{}, cn, nil, err
	}
	if room >= full {
		return a, cn, d, nil
	}
	if room >= MinTokens {
		if cn, err = s.notesPart(ctx, p, req, room); err == nil {
			a, err = compose(cn, ret, room)
		}
		if err != nil {
			d.Abandon(ctx)
			return Answer{}, cn, nil, err
		}
	}
	if room < MinTokens || a.Tokens.Total == 0 {
		empty := notes.Block{NoteIDs: []string{}}
		cn = notes.ContextNotes{Enabled: cn.Enabled, Block: empty, Task: empty, SourceID: cn.SourceID}
		a = answerOf(cn, knowledge.Retrieval{Mode: ret.Mode}, "", Tokens{})
		a.BudgetExhausted = true
	}
	a.cut = true
	return a, cn, d, nil
}

// settle leaves the receipt of a run's answer a (none when BudgetExhausted: nothing was
// delivered), naming the run and the tokens drawn, then settles the draw and puts the run's
// figures in a.
func (s *Service) settle(ctx context.Context, p auth.Principal, req Request, cn notes.ContextNotes, a Answer, kbs []string, d *runs.Draw) (Answer, error) {
	if !a.BudgetExhausted {
		if err := s.record(ctx, p, req, cn, a, kbs, d); err != nil {
			d.Abandon(ctx)
			return Answer{}, err
		}
	}
	rep, err := d.Settle(ctx, drawn(a), a.cut)
	if err != nil {
		return Answer{}, err
	}
	a.Run = &rep
	return a, nil
}

// drawn is what answer a draws on its run: its total, or nothing for a 304 (the caller has
// it already) or an exhausted answer.
func drawn(a Answer) int {
	if a.NotModified || a.BudgetExhausted {
		return 0
	}
	return a.Tokens.Total
}
