package subjects

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Item kinds of the profile store in erasure reaches and certificates.
const (
	KindProfile       = erasure.KindProfile
	KindProfileHandle = erasure.KindProfileHandle
)

// Eraser is the profile store's eraser (issue 12 §2, WM-13): a subject erasure deletes the
// subject's profiles (sealed) and every handle hash of theirs. A conversation erasure
// reaches no profile. Residue finds profiles by id and handles by profile or handle hash.
// Export (S is needed for it: profiles are sealed) gives the subject's profiles.
type Eraser struct{ S *Service }

// Name is "subjects".
func (Eraser) Name() string { return "subjects" }

// Covers lists profiles' sealed data and profile_handles' columns.
func (Eraser) Covers() []erasure.Column {
	return []erasure.Column{{Table: "profiles", Column: "sealed"}, {Table: "profile_handles", Column: "handle_hash"}, {Table: "profile_handles", Column: "profile_id"}}
}

// Backups is erasure.Shredded: profiles are sealed under their own key, which the erasure
// destroys; a handle row holds only a keyed hash (under the server secret, not the value).
func (Eraser) Backups(erasure.Target) string { return erasure.Shredded }

// EraseSubject deletes the handles, then the profiles, of t inside tx, and bumps the
// space's profile revision when it deleted a profile.
func (Eraser) EraseSubject(ctx context.Context, tx bun.Tx, t erasure.Target) (erasure.Reach, error) {
	out := erasure.Reach{}
	if t.Kind != erasure.Subject || len(t.ProfileIDs) == 0 {
		return out, nil
	}
	var handles []string
	if err := tx.NewSelect().Model((*models.ProfileHandle)(nil)).Column("handle_hash").
		Where("space_id = ? AND profile_id IN (?)", t.SpaceID, bun.In(t.ProfileIDs)).Order("handle_hash ASC").Scan(ctx, &handles); err != nil {
		return nil, fmt.Errorf("subjects: find handles: %w", err)
	}
	if _, err := tx.NewDelete().Model((*models.ProfileHandle)(nil)).
		Where("space_id = ? AND profile_id IN (?)", t.SpaceID, bun.In(t.ProfileIDs)).Exec(ctx); err != nil {
		return nil, fmt.Errorf("subjects: delete handles: %w", err)
	}
	var gone []string
	if err := tx.NewDelete().Model((*models.Profile)(nil)).
		Where("space_id = ? AND id IN (?)", t.SpaceID, bun.In(t.ProfileIDs)).Returning("id").Scan(ctx, &gone); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("subjects: delete profiles: %w", err)
	}
	if len(gone) > 0 {
		// Every replica's cached known subjects reload at their next use (Service.Known).
		if err := spaces.BumpRevision(ctx, tx, t.SpaceID, spaces.RevisionProfiles); err != nil {
			return nil, err
		}
	}
	out.Add(KindProfile, gone...)
	out.Add(KindProfileHandle, handles...)
	return out, nil
}

// Residue finds profiles of t's ids and handles of t's profiles or handle hashes.
func (Eraser) Residue(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Reach, error) {
	out := erasure.Reach{}
	if t.Kind != erasure.Subject {
		return out, nil
	}
	if len(t.ProfileIDs) > 0 {
		var ids []string
		if err := idb.NewSelect().Model((*models.Profile)(nil)).Column("id").
			Where("space_id = ? AND id IN (?)", t.SpaceID, bun.In(t.ProfileIDs)).Scan(ctx, &ids); err != nil {
			return nil, fmt.Errorf("subjects: probe profiles: %w", err)
		}
		out.Add(KindProfile, ids...)
	}
	q := idb.NewSelect().Model((*models.ProfileHandle)(nil)).Column("handle_hash").Where("space_id = ?", t.SpaceID)
	q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("handle_hash IN (?)", bun.In(append([]string{""}, t.HandleHashes...)))
		if len(t.ProfileIDs) > 0 {
			q = q.WhereOr("profile_id IN (?)", bun.In(t.ProfileIDs))
		}
		return q
	})
	var hashes []string
	if err := q.Scan(ctx, &hashes); err != nil {
		return nil, fmt.Errorf("subjects: probe handles: %w", err)
	}
	out.Add(KindProfileHandle, hashes...)
	return out, nil
}

// ExportedProfile is a profile in a data package (GOV-3): its name and canonical handles,
// unsealed, and when it was created (UTC).
type ExportedProfile struct {
	ID        string    `json:"profile_id"`
	Name      string    `json:"name"`
	Handles   []string  `json:"handles"`
	CreatedAt time.Time `json:"created_at"`
}

// Export returns the profiles of a subject Target, unsealed, as member "profiles" with count
// "profiles"; a profile gone or no longer readable (its key destroyed) is left out. A
// conversation Target gives the zero Export. Errors: the store's, the key store's.
func (e Eraser) Export(ctx context.Context, _ bun.IDB, t erasure.Target) (erasure.Export, error) {
	if t.Kind != erasure.Subject {
		return erasure.Export{}, nil
	}
	if e.S == nil {
		return erasure.Export{}, errors.New("subjects: the eraser has no service to export with")
	}
	out := []ExportedProfile{}
	var touched []string
	for _, pid := range t.ProfileIDs {
		prof, err := e.S.Get(ctx, t.SpaceID, pid)
		if fault.As(err) != nil {
			continue // gone or unreadable: nothing of it to export
		}
		if err != nil {
			return erasure.Export{}, err
		}
		//lint:ignore S1016 the export names each field it hands out, so a field added to Profile is not exported unseen
		out = append(out, ExportedProfile{ID: prof.ID, Name: prof.Name, Handles: prof.Handles, CreatedAt: prof.CreatedAt})
		touched = append(touched, prof.ID)
	}
	return erasure.Export{Members: map[string]any{"profiles": out}, Counts: map[string]int{"profiles": len(out)}, Touched: touched}, nil
}

// Searched says what the profile store's content probe reads: nothing, profiles are sealed
// under each subject's own key and handles are keyed hashes.
func (Eraser) Searched() string {
	return "nothing readable: profiles are sealed, handles are keyed hashes"
}

// ProbeContent finds nothing: no profile column is readable text (Searched).
func (Eraser) ProbeContent(context.Context, bun.IDB, erasure.Target) ([]erasure.Finding, error) {
	return nil, nil
}

// EraseFound erases nothing: ProbeContent finds nothing; any finding is an error.
func (Eraser) EraseFound(_ context.Context, _ bun.Tx, _ string, found []erasure.Finding) (erasure.Reach, error) {
	if len(found) > 0 {
		return nil, fmt.Errorf("subjects: erase found: a finding of another store")
	}
	return erasure.Reach{}, nil
}
