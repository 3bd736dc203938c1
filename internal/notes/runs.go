package notes

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/runs"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// errNoRuns is a call naming a run on a Service without a run store (a wiring error).
var errNoRuns = errors.New("notes: a run was named but the service has no run store")

// beginRun is the draw of one read of p in run.
func (s *Service) beginRun(p auth.Principal, run *runs.Run) (*runs.Draw, error) {
	if s.Runs == nil {
		return nil, errNoRuns
	}
	return s.Runs.Begin(p, run)
}

// confirmConfig confirms that snap, when it came from a replica's cache, is still current
// (else spaces.ErrStaleConfig: a revoked key is refused after the caller reloads it): a read
// that records no receipt checking the revision (in a run, or while agent memory is off) is
// confirmed here.
func (s *Service) confirmConfig(ctx context.Context, snap spaces.Snapshot, spaceID string) error {
	if !snap.Cached || !snap.Assumes(spaceID) {
		return nil
	}
	current, err := spaces.Revision(ctx, s.DB, spaceID, spaces.RevisionConfig)
	if err != nil {
		return err
	}
	if current != snap.Revision {
		return spaces.ErrStaleConfig
	}
	return nil
}

// blockInRun is Block's answer for a read in a run (CTX-3). It reads the deliverable notes
// once, builds the block at the request's own max_tokens (what the read would deliver),
// reserves min(that, what the run has left), and when it got less builds the block again
// within what it got (whole notes only, in the block's order: cut). It reads the store, not
// the replica's kept answers (issue 16): a run's answer depends on what the run has left.
// Agent memory off: the empty block, nothing drawn, no run member.
func (s *Service) blockInRun(ctx context.Context, snap spaces.Snapshot, p auth.Principal, req BlockRequest, v viewer, f spaces.Features) (Block, error) {
	if err := s.confirmConfig(ctx, snap, p.SpaceID); err != nil {
		return Block{}, err
	}
	d, err := s.beginRun(p, req.Run)
	if err != nil {
		return Block{}, err
	}
	if !f.AgentMemory.Enabled {
		b := Block{NoteIDs: []string{}}
		b.ETag = etag(b, req)
		b.NotModified = matches(req.IfNoneMatch, b.ETag)
		return b, nil
	}
	now := s.now()
	var rows []models.Note
	if err := deliverable(s.DB.NewSelect().Model(&rows), v, now).Scan(ctx); err != nil {
		return Block{}, fmt.Errorf("notes: block: %w", err)
	}
	rows, err = s.openNotes(ctx, rows)
	if err != nil {
		return Block{}, err
	}
	full, err := s.contextBlock(rows, req)
	if err != nil {
		return Block{}, err
	}
	room, err := d.Reserve(ctx, full.Tokens)
	if err != nil {
		return Block{}, err
	}
	b := full
	if room < full.Tokens {
		cut := req
		cut.MaxTokens = room
		if b, err = s.contextBlock(rows, cut); err != nil {
			d.Abandon(ctx)
			return Block{}, err
		}
	}
	return s.settleBlock(ctx, p, v, req, d, full, b)
}

// settleBlock answers block b of a run, full being the block without the run: a 304 when
// If-None-Match names b's ETag (nothing drawn); budget_exhausted when b holds no note while
// full holds some (no note, nothing drawn, no receipt: nothing was delivered); otherwise the
// receipt block.read naming the notes and the run (run_id, run_tokens), then the draw settled.
func (s *Service) settleBlock(ctx context.Context, p auth.Principal, v viewer, req BlockRequest, d *runs.Draw, full, b Block) (Block, error) {
	b.NotModified = matches(req.IfNoneMatch, b.ETag)
	exhausted := len(full.NoteIDs) > 0 && len(b.NoteIDs) == 0
	drawn := b.Tokens
	if b.NotModified || exhausted {
		drawn = 0
	}
	if !exhausted {
		detail := map[string]any{"tokens": b.Tokens, "not_modified": b.NotModified, "source_id": v.source}
		d.Detail(detail, drawn)
		err := receipts.Record(ctx, s.Receipts, s.DB, p.SpaceID, receipts.Entry{
			Kind: receipts.KindAgentMemory, Action: "block.read", ActorKey: p.KeyID, Manifest: blockManifest(b, req), Detail: detail,
		}, s.now())
		if err != nil {
			d.Abandon(ctx)
			return Block{}, err
		}
	}
	rep, err := d.Settle(ctx, drawn, b.Tokens < full.Tokens)
	if err != nil {
		return Block{}, err
	}
	b.Run, b.BudgetExhausted = &rep, exhausted
	return b, nil
}

// searchInRun answers a search in a run (CTX-3) over rows (the matching notes, best first):
// each note costs the tokens of its block rendering ("## title (kind)" and body, cl100k_base);
// it reserves min(the notes' sum, what the run has left) and keeps, best first, the notes that
// fit what it got (a note that does not fit is skipped whole; a later, shorter one may fit).
// No note kept while some matched: budget_exhausted, no receipt, nothing drawn. Otherwise the
// receipt search names the notes kept and the run.
func (s *Service) searchInRun(ctx context.Context, p auth.Principal, v viewer, req SearchRequest, rows []models.Note, words int) (SearchResult, error) {
	d, err := s.beginRun(p, req.Run)
	if err != nil {
		return SearchResult{}, err
	}
	costs := make([]int, len(rows))
	full := 0
	for i, r := range rows {
		if costs[i], err = cachedCount(r.ID, renderNote(r)); err != nil {
			return SearchResult{}, err
		}
		full += costs[i]
	}
	room, err := d.Reserve(ctx, full)
	if err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{Enabled: true, Notes: []Note{}}
	ids, used := []string{}, 0
	for i, r := range rows {
		if used+costs[i] > room {
			continue
		}
		used += costs[i]
		out.Notes = append(out.Notes, toNote(r))
		ids = append(ids, r.ID)
	}
	exhausted := len(rows) > 0 && len(ids) == 0
	if !exhausted {
		detail := map[string]any{"count": len(ids), "words": words, "tags": len(req.Tags), "source_id": v.source}
		d.Detail(detail, used)
		err := receipts.Record(ctx, s.Receipts, s.DB, p.SpaceID, receipts.Entry{
			Kind: receipts.KindAgentMemory, Action: "search", ActorKey: p.KeyID, ObjectIDs: ids, Detail: detail,
		}, s.now())
		if err != nil {
			d.Abandon(ctx)
			return SearchResult{}, err
		}
	}
	rep, err := d.Settle(ctx, used, len(ids) < len(rows))
	if err != nil {
		return SearchResult{}, err
	}
	out.Run, out.BudgetExhausted = &rep, exhausted
	return out, nil
}
