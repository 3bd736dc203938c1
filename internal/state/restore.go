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
// (nothing was sealed).
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

// dropUnreadableConversations deletes, inside idb, the sealed states that no longer open:
// those whose keys (keysOf) the key store no longer holds (of a conversation or task scope
// naming no subject, the conversation key: the conversation, or a subject linked to it, was
// erased; of any state with a scope, its own key: it was deleted, or erased by its content),
// and those whose keys exist but are newer than the row (its own key was destroyed and made
// again: the state was deleted or expired, then written anew). DropUnreadable's second half.
// States still in clear (written before they were sealed) are kept.
func (s *Service) dropUnreadableConversations(ctx context.Context, idb bun.IDB) (int, error) {
	var rows []models.AgentState
	if err := idb.NewSelect().Model(&rows).Column("id", "scope_hash", "scope_kind", "agent", "subject_hash", "body", "field_times").
		Scan(ctx); err != nil {
		return 0, fmt.Errorf("state: list sealed states: %w", err)
	}
	exists := map[string]bool{}
	var ids []string
	for i := range rows {
		readable, err := s.opens(ctx, &rows[i], exists)
		if err != nil {
			return 0, err
		}
		if !readable {
			ids = append(ids, rows[i].ID)
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

// opens reports whether stored row r still opens: in clear, or sealed under keys that exist
// (keysExist, remembered in exists) and open it (Unseal, on a copy: r is left sealed).
func (s *Service) opens(ctx context.Context, r *models.AgentState, exists map[string]bool) (bool, error) {
	ids := keysOf(r)
	if len(ids) == 0 {
		return true, nil
	}
	ok, err := s.keysExist(ctx, ids, exists)
	if err != nil || !ok {
		return false, err
	}
	probe := *r
	return s.Unseal(ctx, &probe)
}

// keysOf names the keys a stored row needs to open: none in clear, keyIDFor's one under
// "\x00s1", both of sealingFor's under "\x00s2".
func keysOf(r *models.AgentState) []string {
	switch {
	case bytes.HasPrefix(r.Body, sealedBothPrefix):
		sk := sealingFor(r.SubjectHash, r.ScopeKind, r.ScopeHash, r.Agent)
		return []string{sk.outer, sk.own}
	case bytes.HasPrefix(r.Body, sealedBodyPrefix):
		return []string{keyIDFor(r.SubjectHash, r.ScopeKind, r.ScopeHash, r.Agent)}
	}
	return nil
}

// keysExist reports whether the key store holds every key of ids, remembering each answer
// in exists (existence only: a key is never opened); an empty id is a key that cannot exist.
func (s *Service) keysExist(ctx context.Context, ids []string, exists map[string]bool) (bool, error) {
	for _, id := range ids {
		ok, seen := exists[id]
		if !seen && id != "" {
			var err error
			if ok, err = s.Keys.Exists(ctx, id); err != nil {
				return false, fmt.Errorf("state: data key: %w", err)
			}
			exists[id] = ok
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}
