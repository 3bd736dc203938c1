package state

import (
	"bytes"
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/models"
)

// DropUnreadable deletes, inside idb, every working state sealed under a subject key the key
// store no longer holds (the subject was erased): the restore procedure's step for working
// memory (issue 29 §1, ER-1). The agents' version floors stay, so a state written again never
// restarts at version 1. It returns how many it deleted; with no key store it deletes nothing
// (nothing was sealed). Existence only: a key is never opened.
func (s *Service) DropUnreadable(ctx context.Context, idb bun.IDB) (int, error) {
	if s.Keys == nil {
		return 0, nil
	}
	var hashes []string
	if err := idb.NewSelect().Model((*models.AgentState)(nil)).ColumnExpr("DISTINCT subject_hash").
		Where("subject_hash <> ''").Scan(ctx, &hashes); err != nil {
		return 0, fmt.Errorf("state: list subject keys: %w", err)
	}
	n := 0
	for _, h := range hashes {
		ok, err := s.Keys.Exists(ctx, SubjectKeyID(h))
		if err != nil {
			return 0, fmt.Errorf("state: subject key: %w", err)
		}
		if ok {
			continue
		}
		res, err := idb.NewDelete().Model((*models.AgentState)(nil)).Where("subject_hash = ?", h).Exec(ctx)
		if err != nil {
			return 0, fmt.Errorf("state: drop unreadable: %w", err)
		}
		m, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("state: drop unreadable: %w", err)
		}
		n += int(m)
	}
	c, err := s.dropUnreadableConversations(ctx, idb)
	return n + c, err
}

// dropUnreadableConversations deletes, inside idb, the sealed states naming no subject whose
// key is gone: of a conversation or task scope, the conversation key (the conversation, or a
// subject linked to it, was erased); of any other scope, the state's own key (it was deleted,
// or erased by its content). DropUnreadable's second half. States still in clear (written
// before they were sealed) are kept.
func (s *Service) dropUnreadableConversations(ctx context.Context, idb bun.IDB) (int, error) {
	var rows []models.AgentState
	if err := idb.NewSelect().Model(&rows).Column("id", "scope_hash", "scope_kind", "agent", "body").
		Where("subject_hash = ''").Scan(ctx); err != nil {
		return 0, fmt.Errorf("state: list unlinked states: %w", err)
	}
	gone := map[string]bool{}
	var ids []string
	for _, r := range rows {
		if !bytes.HasPrefix(r.Body, sealedBodyPrefix) {
			continue
		}
		keyID := keyIDFor("", r.ScopeKind, r.ScopeHash, r.Agent)
		missing, seen := gone[keyID]
		if !seen {
			ok, err := s.Keys.Exists(ctx, keyID)
			if err != nil {
				return 0, fmt.Errorf("state: data key: %w", err)
			}
			missing, gone[keyID] = !ok, !ok
		}
		if missing {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if _, err := idb.NewDelete().Model((*models.AgentState)(nil)).Where("id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
		return 0, fmt.Errorf("state: drop unreadable: %w", err)
	}
	return len(ids), nil
}
