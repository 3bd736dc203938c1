package notes

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/models"
)

// TaskSectionTokens is the most the task section of a context call may take (CTX-2: "up to
// 200 tokens of notes tagged with the task's object types").
const TaskSectionTokens = 200

// ContextRequest is the notes part of POST /v1/context (CTX-2). The block is BlockRequest's
// (View, Tags, SourceID, BlockTokens 50..2000 as max_tokens); TaskTags are the task's object
// types; with TaskTokens > 0 the task section holds, within TaskTokens and what Budget leaves
// after the block (Budget minus the block's tokens), the notes carrying one of TaskTags.
type ContextRequest struct {
	View        string
	Tags        []string
	SourceID    string
	BlockTokens int
	TaskTags    []string
	TaskTokens  int
	Budget      int
}

// ContextNotes is the notes part of a context answer: Block is the system block (the same
// text, note ids, token count and ETag as GET /v1/agent-memory/block gives for the same
// notes, view, tags and budget), Task the task section (Text "" and no ids when no note fits
// or none was asked for). Enabled is false when agent memory is off (both empty).
type ContextNotes struct {
	Enabled bool
	Block   Block
	Task    Block
	// SourceID is whose notes were read ("" for an agent key: its own).
	SourceID string
}

// Context builds the notes part of a context call for p (CTX-2) from one read of the notes p
// may read: the block in sortForBlock's order within BlockTokens, and the task section, the
// notes carrying one of TaskTags in the same order (requested tags: TaskTags) within
// TaskTokens, in the block's format (the same fence and header, whole notes only). It leaves
// no receipt and keeps no answer: the context call records one receipt naming every note it
// delivers. Errors are Block's (validation naming the member, an unknown view, scopes).
func (s *Service) Context(ctx context.Context, p auth.Principal, req ContextRequest) (ContextNotes, error) {
	breq := BlockRequest{MaxTokens: req.BlockTokens, Tags: req.Tags, View: req.View, SourceID: req.SourceID}
	if err := (&BlockRequest{MaxTokens: DefaultBlockTokens, Tags: req.TaskTags}).validate(); err != nil {
		return ContextNotes{}, invalid("task.object_types", "at most %d object types, each lower-case a-z, 0-9, _ . : -", MaxTags)
	}
	if err := breq.validate(); err != nil {
		return ContextNotes{}, err
	}
	if err := s.resolveView(ctx, p.SpaceID, &breq); err != nil {
		return ContextNotes{}, err
	}
	v, err := s.reader(ctx, p, req.SourceID, false)
	if err != nil {
		return ContextNotes{}, err
	}
	f, err := s.Docs.Features(ctx, p.SpaceID)
	if err != nil {
		return ContextNotes{}, err
	}
	empty := Block{NoteIDs: []string{}}
	out := ContextNotes{Block: empty, Task: empty, SourceID: v.source}
	if !f.AgentMemory.Enabled {
		out.Block.ETag = etag(out.Block, breq)
		return out, nil
	}
	out.Enabled = true
	var rows []models.Note
	if err := deliverable(s.DB.NewSelect().Model(&rows), v, s.now()).Scan(ctx); err != nil {
		return ContextNotes{}, fmt.Errorf("notes: context: %w", err)
	}
	if rows, err = s.openNotes(ctx, rows); err != nil {
		return ContextNotes{}, err
	}
	if out.Block, err = s.contextBlock(rows, breq); err != nil {
		return ContextNotes{}, err
	}
	if out.Task, err = taskSection(rows, req.TaskTags, min(req.TaskTokens, req.Budget-out.Block.Tokens)); err != nil {
		return ContextNotes{}, err
	}
	return out, nil
}

// contextBlock is the block of req over rows, as buildBlock builds it.
func (s *Service) contextBlock(rows []models.Note, req BlockRequest) (Block, error) {
	rows = slices.Clone(rows)
	sortForBlock(rows, req)
	b, err := assemble(rows, req.MaxTokens)
	if err != nil {
		return Block{}, err
	}
	b.Enabled = true
	b.ETag = etag(b, req)
	return b, nil
}

// taskSection is the task section over rows: the notes carrying one of tags, in the block's
// order with tags as the requested tags, whole notes within max tokens. No tags or a budget
// too small for the wrapper and one note: an empty section.
func taskSection(rows []models.Note, tags []string, max int) (Block, error) {
	empty := Block{NoteIDs: []string{}}
	if len(tags) == 0 || max <= 0 {
		return empty, nil
	}
	var tagged []models.Note
	for _, r := range rows {
		if slices.ContainsFunc(noterows.DecodeTags(r.Tags), func(t string) bool { return slices.Contains(tags, t) }) {
			tagged = append(tagged, r)
		}
	}
	if len(tagged) == 0 {
		return empty, nil
	}
	sortForBlock(tagged, BlockRequest{Tags: tags})
	b, err := assemble(tagged, max)
	if err != nil {
		return Block{}, err
	}
	b.Enabled = true
	return b, nil
}
