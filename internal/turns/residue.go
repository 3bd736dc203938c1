package turns

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"agentmemory/internal/compliance"
	"agentmemory/models"
)

// SubjectResidue is the probe of a subject erasure over the turns store (issue 12 §3): the
// identity links still holding one of the subject's handle hashes or profiles, and the turns
// of the conversations those links name or still carrying one of the profiles; read only,
// inside idb. After EraseSubject it finds nothing.
func (s *Service) SubjectResidue(ctx context.Context, idb bun.IDB, spaceID string, ref compliance.SubjectRef) ([]compliance.Erased, error) {
	links, err := subjectLinks(ctx, idb, spaceID, ref)
	if err != nil {
		return nil, err
	}
	rows, err := subjectTurns(ctx, idb, spaceID, links, ref.ProfileIDs)
	if err != nil {
		return nil, err
	}
	var out []compliance.Erased
	if len(rows) > 0 {
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		out = append(out, compliance.Erased{Kind: compliance.KindTurn, IDs: ids})
	}
	if len(links) > 0 {
		ids := make([]string, len(links))
		for i, l := range links {
			ids[i] = l.ID
		}
		out = append(out, compliance.Erased{Kind: compliance.KindIdentityLink, IDs: ids})
	}
	return out, nil
}

// ConversationResidue is the probe of a conversation erasure: the turns and identity links
// still stored under the conversation's keyed scope hash; read only.
func (s *Service) ConversationResidue(ctx context.Context, idb bun.IDB, spaceID, scopeHash string) ([]compliance.Erased, error) {
	var turnIDs, linkIDs []string
	if err := idb.NewSelect().Model((*models.Turn)(nil)).Column("id").
		Where("space_id = ? AND scope_hash = ?", spaceID, scopeHash).Scan(ctx, &turnIDs); err != nil {
		return nil, fmt.Errorf("turns: probe turns: %w", err)
	}
	if err := idb.NewSelect().Model((*models.IdentityLink)(nil)).Column("id").
		Where("space_id = ? AND scope_hash = ?", spaceID, scopeHash).Scan(ctx, &linkIDs); err != nil {
		return nil, fmt.Errorf("turns: probe links: %w", err)
	}
	var out []compliance.Erased
	if len(turnIDs) > 0 {
		out = append(out, compliance.Erased{Kind: compliance.KindTurn, IDs: turnIDs})
	}
	if len(linkIDs) > 0 {
		out = append(out, compliance.Erased{Kind: compliance.KindIdentityLink, IDs: linkIDs})
	}
	return out, nil
}
