// Package subjects keeps data subjects (customers) as profiles whose name and handles are
// sealed under a per-subject key, findable only through keyed hashes of canonical handles. It
// also gives the masking package the space's known subjects and masking rules.
package subjects

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/redact"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Service manages profiles and the space's masking rules.
type Service struct {
	DB     *bun.DB
	Docs   spaces.Documents
	Hasher keyed.Hasher
	Keys   keystore.Store
	Now    func() time.Time

	mu    sync.Mutex
	known map[string]knownEntry // space id -> cached known subjects
}

// knownEntry is a space's known subjects as loaded at the space's profile revision.
type knownEntry struct {
	set      *redact.KnownSubjects
	revision int64
}

// ProfileRequest is the body of POST /v1/profiles.
type ProfileRequest struct {
	Name    string   `json:"name"`
	Handles []string `json:"handles"`
}

// sealedProfile is what a profile's sealed column holds.
type sealedProfile struct {
	Name    string   `json:"name"`
	Handles []string `json:"handles"`
}

// Profile is a profile as the API shows it to people with a right to see it.
type Profile struct {
	ID        string    `json:"profile_id"`
	Name      string    `json:"name"`
	Handles   []string  `json:"handles"`
	CreatedAt time.Time `json:"created_at"`
}

// Canonical returns the canonical form of a handle under the space's default phone region.
// A malformed handle is fault.Invalid.
func (s *Service) Canonical(ctx context.Context, spaceID, handle string) (string, error) {
	f, err := s.Docs.Features(ctx, spaceID)
	if err != nil {
		return "", err
	}
	c, err := redact.CanonicalHandle(handle, f.Region())
	if err != nil {
		return "", fault.New(fault.Invalid, "invalid_handle", "a handle reads kind:value with kind email, phone, document or username")
	}
	return c, nil
}

// HandleHash returns the keyed hash under which a canonical handle is looked up.
func (s *Service) HandleHash(spaceID, canonical string) string {
	return s.Hasher.Hash(spaceID, "subject", canonical)
}

// Create stores a profile for p (role integration) and returns its id. Handles are
// canonicalised; a handle already held by another profile of the space is fault.Conflict
// "handle_taken". The name and handles are sealed under the new subject's key.
func (s *Service) Create(ctx context.Context, p auth.Principal, req ProfileRequest) (string, error) {
	if err := p.RequireRole(auth.RoleIntegration); err != nil {
		return "", err
	}
	name := strings.TrimSpace(req.Name)
	if len(name) > 200 {
		return "", fault.New(fault.Invalid, "invalid_member", "name is at most 200 characters").With("member", "name")
	}
	if len(req.Handles) == 0 || len(req.Handles) > 20 {
		return "", fault.New(fault.Invalid, "invalid_member", "handles must list 1 to 20 handles").With("member", "handles")
	}
	handles, hashes, err := s.canonicalHandles(ctx, p.SpaceID, req.Handles)
	if err != nil {
		return "", err
	}
	now := s.Now().UTC()
	id := auth.NewID("prof")
	key, err := s.Keys.DataKey(ctx, id, true)
	if err != nil {
		return "", fmt.Errorf("subjects: data key: %w", err)
	}
	plain, _ := json.Marshal(sealedProfile{Name: name, Handles: handles}) // cannot fail: strings only
	sealed, err := keystore.Seal(key, plain, []byte(id))
	if err != nil {
		return "", fmt.Errorf("subjects: seal: %w", err)
	}
	if err := s.storeProfile(ctx, p, id, sealed, hashes, now); err != nil {
		_ = s.Keys.Destroy(ctx, id) // best effort: a key whose profile was never stored seals nothing
		return "", err
	}
	s.forget(p.SpaceID)
	return id, nil
}

// canonicalHandles returns the canonical forms of handles, without repeats, in order, with
// their handle hashes in the space. A malformed handle is fault.Invalid naming its member
// (handles[i]).
func (s *Service) canonicalHandles(ctx context.Context, spaceID string, in []string) (handles, hashes []string, err error) {
	seen := map[string]bool{}
	for i, h := range in {
		c, err := s.Canonical(ctx, spaceID, h)
		if err != nil {
			return nil, nil, fault.New(fault.Invalid, "invalid_handle", "handles[%d] is not a valid handle (email:, phone:, document:, username:)", i).With("member", fmt.Sprintf("handles[%d]", i))
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		handles = append(handles, c)
		hashes = append(hashes, s.HandleHash(spaceID, c))
	}
	return handles, hashes, nil
}

// storeProfile inserts the profile id (sealed) and its handle hashes, bumps the space's
// profile revision and appends the admin receipt, in one transaction. A hash another profile
// of the space holds is fault.Conflict "handle_taken", and nothing is stored.
func (s *Service) storeProfile(ctx context.Context, p auth.Principal, id string, sealed []byte, hashes []string, now time.Time) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		taken, err := tx.NewSelect().Model((*models.ProfileHandle)(nil)).
			Where("space_id = ? AND handle_hash IN (?)", p.SpaceID, bun.In(hashes)).Count(ctx)
		if err != nil {
			return fmt.Errorf("subjects: check handles: %w", err)
		}
		if taken > 0 {
			return fault.New(fault.Conflict, "handle_taken", "a handle already belongs to another profile of this space")
		}
		row := &models.Profile{ID: id, SpaceID: p.SpaceID, Sealed: sealed, CreatedAt: now, UpdatedAt: now}
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return fmt.Errorf("subjects: insert profile: %w", err)
		}
		for _, h := range hashes {
			if _, err := tx.NewInsert().Model(&models.ProfileHandle{SpaceID: p.SpaceID, HandleHash: h, ProfileID: id}).Exec(ctx); err != nil {
				return fmt.Errorf("subjects: insert handle: %w", err)
			}
		}
		if err := spaces.BumpRevision(ctx, tx, p.SpaceID, spaces.RevisionProfiles); err != nil {
			return err
		}
		_, err = receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "profile.create", ActorKey: p.KeyID,
			ObjectIDs: []string{id}, Detail: map[string]any{"handles": len(hashes)},
		}, now)
		return err
	})
}

// Get returns the profile id of the space, unsealed. Missing (or erased) is fault.NotFound.
func (s *Service) Get(ctx context.Context, spaceID, id string) (Profile, error) {
	var row models.Profile
	err := s.DB.NewSelect().Model(&row).Where("id = ? AND space_id = ?", id, spaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Profile{}, fault.New(fault.NotFound, "profile_not_found", "no profile with that id in this space")
	}
	if err != nil {
		return Profile{}, fmt.Errorf("subjects: load profile: %w", err)
	}
	sp, err := s.unseal(ctx, row)
	if err != nil {
		return Profile{}, err
	}
	return Profile{ID: row.ID, Name: sp.Name, Handles: sp.Handles, CreatedAt: row.CreatedAt.UTC()}, nil
}

func (s *Service) unseal(ctx context.Context, row models.Profile) (sealedProfile, error) {
	key, err := s.Keys.DataKey(ctx, row.ID, false)
	if errors.Is(err, keystore.ErrNoKey) {
		return sealedProfile{}, fault.New(fault.NotFound, "profile_not_found", "no profile with that id in this space")
	}
	if err != nil {
		return sealedProfile{}, fmt.Errorf("subjects: data key: %w", err)
	}
	plain, err := keystore.Open(key, row.Sealed, []byte(row.ID))
	if err != nil {
		return sealedProfile{}, fmt.Errorf("subjects: unseal %s: %w", row.ID, err)
	}
	var sp sealedProfile
	if err := json.Unmarshal(plain, &sp); err != nil {
		return sealedProfile{}, fmt.Errorf("subjects: decode %s: %w", row.ID, err)
	}
	return sp, nil
}

// HandleHashes returns the keyed hashes of a profile's handles (for finding its states). An
// unknown profile is fault.NotFound.
func (s *Service) HandleHashes(ctx context.Context, spaceID, profileID string) ([]string, error) {
	if _, err := s.Get(ctx, spaceID, profileID); err != nil {
		return nil, err
	}
	var hashes []string
	if err := s.DB.NewSelect().Model((*models.ProfileHandle)(nil)).Column("handle_hash").
		Where("space_id = ? AND profile_id = ?", spaceID, profileID).Scan(ctx, &hashes); err != nil {
		return nil, fmt.Errorf("subjects: handles: %w", err)
	}
	return hashes, nil
}

// SubjectHashes returns the keyed hashes a customer is known by, from one of their handles:
// every handle of the profile holding it, or the handle's own hash when no profile does. A
// malformed handle is fault.Invalid "invalid_handle".
func (s *Service) SubjectHashes(ctx context.Context, spaceID, handle string) ([]string, error) {
	c, err := s.Canonical(ctx, spaceID, handle)
	if err != nil {
		return nil, fault.New(fault.Invalid, "invalid_handle", "a customer handle such as email:... or phone:...")
	}
	h := s.HandleHash(spaceID, c)
	var ids []string
	if err := s.DB.NewSelect().Model((*models.ProfileHandle)(nil)).Column("profile_id").
		Where("space_id = ? AND handle_hash = ?", spaceID, h).Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("subjects: profile of handle: %w", err)
	}
	if len(ids) == 0 {
		return []string{h}, nil
	}
	return s.HandleHashes(ctx, spaceID, ids[0])
}

// Known returns the space's known subjects (names and handles of its profiles, held only as
// keyed hashes). It is exact across replicas: each call reads the space's profile revision
// (one indexed row, bumped in the transaction of every profile creation and of every
// erasure that deletes profiles) and reloads the profiles when it differs from the revision
// the cached set was loaded at, so a profile created or erased through any replica is
// matched, or no longer matched, on this replica's next call (issue 16).
func (s *Service) Known(ctx context.Context, spaceID string) (*redact.KnownSubjects, error) {
	revision, err := spaces.Revision(ctx, s.DB, spaceID, spaces.RevisionProfiles)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	e, ok := s.known[spaceID]
	s.mu.Unlock()
	if ok && e.revision == revision {
		return e.set, nil
	}
	// Rows read after the revision are at least that new: a change committed in between only
	// makes the next call reload again.
	set := redact.NewKnownSubjects(s.Hasher.Key("known-subjects:" + spaceID))
	var rows []models.Profile
	if err := s.DB.NewSelect().Model(&rows).Where("space_id = ?", spaceID).Scan(ctx); err != nil {
		return nil, fmt.Errorf("subjects: load profiles: %w", err)
	}
	for _, row := range rows {
		sp, err := s.unseal(ctx, row)
		if fault.As(err) != nil {
			continue // erased: its key is gone
		}
		if err != nil {
			return nil, err
		}
		if sp.Name != "" {
			set.AddName(sp.Name)
		}
		for _, h := range sp.Handles {
			set.AddHandle(h)
		}
	}
	s.mu.Lock()
	if s.known == nil {
		s.known = map[string]knownEntry{}
	}
	s.known[spaceID] = knownEntry{set: set, revision: revision}
	s.mu.Unlock()
	return set, nil
}

func (s *Service) forget(spaceID string) {
	s.mu.Lock()
	delete(s.known, spaceID)
	s.mu.Unlock()
}

// Forget drops the cached known subjects of a space (after an erasure).
func (s *Service) Forget(spaceID string) { s.forget(spaceID) }

// Options returns the masking options of the space: its default region and known subjects.
func (s *Service) Options(ctx context.Context, spaceID string) (redact.Options, error) {
	f, err := s.Docs.Features(ctx, spaceID)
	if err != nil {
		return redact.Options{}, err
	}
	known, err := s.Known(ctx, spaceID)
	if err != nil {
		return redact.Options{}, err
	}
	return redact.Options{DefaultRegion: f.Region(), Known: known}, nil
}

// MaskText masks personal data in text by the space's rules (typed placeholders such as
// <email>). It implements state.Masker; turns use it too.
func (s *Service) MaskText(ctx context.Context, spaceID, text string) (string, error) {
	opt, err := s.Options(ctx, spaceID)
	if err != nil {
		return "", err
	}
	masked, _ := redact.Mask(text, opt)
	return masked, nil
}
