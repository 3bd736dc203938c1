package turns

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/models"
)

// SubjectResidue is the probe of a subject erasure over the turns store (issue 12 §3): the
// identity links still holding one of the subject's handle hashes or profiles, and the turns
// of the conversations those links name or still carrying one of the profiles; read only,
// inside idb. After EraseSubject it finds nothing.
func (s *Service) SubjectResidue(ctx context.Context, idb bun.IDB, spaceID string, ref erasure.Target) (erasure.Reach, error) {
	links, err := subjectLinks(ctx, idb, spaceID, ref)
	if err != nil {
		return nil, err
	}
	rows, err := subjectTurns(ctx, idb, spaceID, links, ref.ProfileIDs)
	if err != nil {
		return nil, err
	}
	turnIDs := make([]string, len(rows))
	for i, r := range rows {
		turnIDs[i] = r.ID
	}
	linkIDs := make([]string, len(links))
	scopes := make([]string, 0, len(links))
	for i, l := range links {
		linkIDs[i] = l.ID
		scopes = append(scopes, l.ScopeHash)
	}
	keys, err := s.scopeKeys(ctx, scopes)
	if err != nil {
		return nil, err
	}
	r := erased(turnIDs, linkIDs)
	r.Add(KindScopeKey, keys...)
	return r, nil
}

// ConversationResidue is the probe of a conversation erasure: the turns and identity links
// still stored under the conversation's keyed scope hash, and its key if the key store still
// holds it; read only.
func (s *Service) ConversationResidue(ctx context.Context, idb bun.IDB, spaceID, scopeHash string) (erasure.Reach, error) {
	var turnIDs, linkIDs []string
	if err := idb.NewSelect().Model((*models.Turn)(nil)).Column("id").
		Where("space_id = ? AND scope_hash = ?", spaceID, scopeHash).Scan(ctx, &turnIDs); err != nil {
		return nil, fmt.Errorf("turns: probe turns: %w", err)
	}
	if err := idb.NewSelect().Model((*models.IdentityLink)(nil)).Column("id").
		Where("space_id = ? AND scope_hash = ?", spaceID, scopeHash).Scan(ctx, &linkIDs); err != nil {
		return nil, fmt.Errorf("turns: probe links: %w", err)
	}
	keys, err := s.scopeKeys(ctx, []string{scopeHash})
	if err != nil {
		return nil, err
	}
	r := erased(turnIDs, linkIDs)
	r.Add(KindScopeKey, keys...)
	return r, nil
}
