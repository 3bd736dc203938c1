package compliance

import (
	"context"
	"fmt"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
)

// PreviewStore is one store's line of an erasure preview: how many items of each kind an
// erasure of the target would remove there now (counts only, never a value or an id).
type PreviewStore struct {
	Store string         `json:"store"`
	Kinds map[string]int `json:"kinds"`
	Total int            `json:"total"`
}

// Preview is what an erasure of a target would remove now, per store (the Console's step
// before the confirmation): Profiles is how many profiles the subject resolves to.
type Preview struct {
	TargetKind string         `json:"target_kind"`
	Profiles   int            `json:"profiles"`
	Stores     []PreviewStore `json:"stores"`
	Total      int            `json:"total"`
}

// PreviewErasure resolves req as RequestErasure would (role compliance) and asks every
// registered store's residue probe, read only, what it holds of the target: nothing is
// recorded or changed, and the answer holds counts only. Errors are RequestErasure's.
func (s *Service) PreviewErasure(ctx context.Context, p auth.Principal, req ErasureRequest) (Preview, error) {
	if err := MayRequest(p); err != nil {
		return Preview{}, err
	}
	kind, hash, ref, err := s.requestTarget(ctx, p.SpaceID, req)
	if err != nil {
		return Preview{}, err
	}
	t := erasure.Target{SpaceID: p.SpaceID, Kind: kind}
	if kind == TargetConversation {
		t.ScopeHash, t.ConversationID = hash, ref
	} else {
		ids, hashes, err := subjectScope(ctx, s.DB, p.SpaceID, hash)
		if err != nil {
			return Preview{}, err
		}
		t.HandleHashes, t.ProfileIDs = hashes, ids
	}
	out := Preview{TargetKind: kind, Profiles: len(t.ProfileIDs), Stores: []PreviewStore{}}
	for _, e := range s.Registry().Erasers() {
		r, err := e.Residue(ctx, s.DB, t)
		if err != nil {
			return Preview{}, fmt.Errorf("compliance: preview %s: %w", e.Name(), err)
		}
		ps := PreviewStore{Store: e.Name(), Kinds: map[string]int{}}
		for k, ids := range r {
			if len(ids) > 0 {
				ps.Kinds[k] = len(ids)
				ps.Total += len(ids)
			}
		}
		out.Stores = append(out.Stores, ps)
		out.Total += ps.Total
	}
	if kind == TargetSubject {
		keys := make([]string, 0, len(t.HandleHashes)+len(t.ProfileIDs))
		for _, h := range t.HandleHashes {
			keys = append(keys, state.SubjectKeyID(h))
		}
		keys = append(keys, t.ProfileIDs...)
		n := 0
		for _, k := range keys {
			ok, err := s.Keys.Exists(ctx, k)
			if err != nil {
				return Preview{}, fmt.Errorf("compliance: preview keys: %w", err)
			}
			if ok {
				n++
			}
		}
		ps := PreviewStore{Store: StoreKeys, Kinds: map[string]int{}, Total: n}
		if n > 0 {
			ps.Kinds[KindSubjectKey] = n
		}
		out.Stores = append(out.Stores, ps)
		out.Total += n
	}
	return out, nil
}

// ListErasures returns the space's latest erasures, newest first, at most limit (role
// compliance or admin); certificates are left out (GetErasure has them).
func (s *Service) ListErasures(ctx context.Context, p auth.Principal, limit int) ([]ErasureView, error) {
	if err := p.RequireRole(auth.RoleCompliance, auth.RoleAdmin); err != nil {
		return nil, err
	}
	var rows []models.Erasure
	if err := s.DB.NewSelect().Model(&rows).Column("id", "status", "target_kind", "failure", "created_at", "ended_at").
		Where("space_id = ?", p.SpaceID).Order("created_at DESC", "id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("compliance: list erasures: %w", err)
	}
	out := make([]ErasureView, 0, len(rows))
	for _, r := range rows {
		v := ErasureView{ErasureID: r.ID, Status: r.Status, TargetKind: r.TargetKind, CreatedAt: r.CreatedAt.UTC()}
		if r.Status == StatusFailed {
			v.Reason = r.Failure
		}
		if r.EndedAt != nil {
			t := r.EndedAt.UTC()
			v.EndedAt = &t
		}
		out = append(out, v)
	}
	return out, nil
}

// ListExports returns the space's latest exports that have not expired, newest first, at
// most limit (role compliance), as GetExport shows each.
func (s *Service) ListExports(ctx context.Context, p auth.Principal, limit int) ([]ExportView, error) {
	if err := p.RequireRole(auth.RoleCompliance); err != nil {
		return nil, err
	}
	var ids []string
	if err := s.DB.NewSelect().Model((*models.ExportPackage)(nil)).Column("id").
		Where("space_id = ? AND expires_at > ?", p.SpaceID, s.now()).Order("created_at DESC", "id DESC").Limit(int64(limit)).Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("compliance: list exports: %w", err)
	}
	out := make([]ExportView, 0, len(ids))
	for _, id := range ids {
		v, err := s.GetExport(ctx, p, id)
		if fault.IsCode(err, "export_not_found") {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// SignedCertificate returns erasure id's certificate as stored when it completed (its
// canonical bytes) and the JSON signature made then ("" when issued without a signing key).
// Role compliance or admin; fault.NotFound erasure_not_found; fault.Conflict
// erasure_not_completed (with "status") before completion or after a failure.
func (s *Service) SignedCertificate(ctx context.Context, p auth.Principal, id string) (cert []byte, signature string, err error) {
	if err := p.RequireRole(auth.RoleCompliance, auth.RoleAdmin); err != nil {
		return nil, "", err
	}
	row, err := s.loadErasure(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return nil, "", err
	}
	if !Completed(row.Status) || row.Certificate == "" {
		return nil, "", fault.New(fault.Conflict, "erasure_not_completed", "the erasure has no certificate: it is not completed").With("status", row.Status)
	}
	return []byte(row.Certificate), row.CertificateSignature, nil
}
