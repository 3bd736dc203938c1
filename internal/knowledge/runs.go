package knowledge

import (
	"context"
	"errors"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/runs"
)

// inRun cuts a ranked retrieval to a run (CTX-3). What a retrieval delivers is its fenced
// context (the chunks it lists are those in it, each once, so the model receives no passage
// the run did not pay for): it reserves min(the context's tokens, what the run has left) and,
// when it got less, fences the context again within what it got (whole chunks in rank order).
// BudgetExhausted: no chunk fits while some did without the run. It returns the cut retrieval
// and the draw, still to settle.
func (s *Service) inRun(ctx context.Context, p auth.Principal, run *runs.Run, out Retrieval) (Retrieval, *runs.Draw, error) {
	if s.Runs == nil {
		return Retrieval{}, nil, errors.New("knowledge: a run was named but the service has no run store")
	}
	d, err := s.Runs.Begin(p, run)
	if err != nil {
		return Retrieval{}, nil, err
	}
	full := out.ContextTokens
	room, err := d.Reserve(ctx, full)
	if err != nil {
		return Retrieval{}, nil, err
	}
	if room < full {
		if out.Context, out.ContextTokens, err = FenceContext(out.Chunks, room); err != nil {
			d.Abandon(ctx)
			return Retrieval{}, nil, err
		}
	}
	kept := []RetrievedChunk{}
	for _, c := range out.Chunks {
		if c.InContext {
			kept = append(kept, c)
		}
	}
	out.Chunks = kept
	out.BudgetExhausted = full > 0 && len(kept) == 0
	return out, d, nil
}

// settle settles the draw d of retrieval out (full: its context's tokens without the run) and
// puts the run's figures in it.
func (s *Service) settle(ctx context.Context, d *runs.Draw, out Retrieval, full int) (Retrieval, error) {
	rep, err := d.Settle(ctx, out.ContextTokens, out.ContextTokens < full)
	if err != nil {
		return Retrieval{}, err
	}
	out.Run = &rep
	return out, nil
}

// answerInRun finishes a retrieval out of principal p: drawn on run when one is named (inRun:
// the context cut to what the run has left), then receipted by record (given the run's draw,
// nil without a run, and the retrieval as answered), then settled on the run. A run whose
// budget is spent settles at once, with nothing receipted; a record that fails abandons the
// draw. Retrieve and the bridged retrieval both end here.
func (s *Service) answerInRun(ctx context.Context, p auth.Principal, run *runs.Run, out Retrieval, record func(d *runs.Draw, out Retrieval) error) (Retrieval, error) {
	var d *runs.Draw
	full := out.ContextTokens
	if run != nil {
		var err error
		if out, d, err = s.inRun(ctx, p, run, out); err != nil {
			return Retrieval{}, err
		}
		if out.BudgetExhausted {
			return s.settle(ctx, d, out, full)
		}
	}
	if err := record(d, out); err != nil {
		d.Abandon(ctx)
		return Retrieval{}, err
	}
	if d != nil {
		return s.settle(ctx, d, out, full)
	}
	return out, nil
}
