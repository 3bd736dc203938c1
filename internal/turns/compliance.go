package turns

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// The turns store's side of erasure, the data package and retention (WM-13, GOV-2, GOV-3,
// MS-3): Eraser is its erasure.Eraser (registered in app), over Service's EraseSubject,
// EraseConversation, ExportSubject and the residue probes; SweepTurns is retention's. Every
// method works inside the bun.IDB it is given (the compliance step's transaction), so what it
// deletes commits together with the erasure's record of it, and a retried step finds nothing
// more.
//
// A subject's conversations are those with an identity link (confirmed or unconfirmed) to one
// of the subject's handle hashes or profiles, plus any turn sealed under one of their profiles.
//
// A conversation linked to two subjects belongs to both. Erasing either subject deletes all
// of its turns: they hold what each participant said, masking leaves the content, and a turn
// cannot be attributed to one subject, so keeping them would keep the erased subject's words
// (and turns sealed under the erased subject's key would be unreadable for the other anyway).
// Only the erased subject's links are deleted: the other subject's link stays, now leading to
// no turns. Likewise both subjects' data packages carry a shared conversation's turns.

// Item kinds of the turns store in reaches and certificates.
const (
	KindTurn         = erasure.KindTurn
	KindIdentityLink = erasure.KindIdentityLink
	KindScopeKey     = erasure.KindScopeKey
)

// DefaultRetentionDays is how long turns are kept when the space's features document sets no
// turns.retention_days.
const DefaultRetentionDays = 90

// chunk bounds the ids bound into one IN (...) list (SQLite and PostgreSQL cap parameters).
const chunk = 500

// Retention returns how long the space keeps turns: turns.retention_days of f (1 to 3650),
// else DefaultRetentionDays, as whole 24-hour days.
func Retention(f spaces.Features) time.Duration {
	d := f.Turns.RetentionDays
	if d <= 0 {
		d = DefaultRetentionDays
	}
	return time.Duration(d) * 24 * time.Hour
}

// RetentionCutoff returns the instant before which turns have expired at now: now in UTC less
// the retention. Days are 24 hours of UTC, so a daylight-saving change in the server's zone
// moves nothing.
func RetentionCutoff(f spaces.Features, now time.Time) time.Time {
	return now.UTC().Add(-Retention(f))
}

// notExpired returns since, moved up to the space's retention cutoff at the service's clock
// when it is earlier: reads never serve a turn past retention, even before the sweep.
func (s *Service) notExpired(ctx context.Context, idb bun.IDB, spaceID string, since time.Time) (time.Time, error) {
	f, err := spaces.Documents{DB: idb}.Features(ctx, spaceID)
	if err != nil {
		return time.Time{}, fmt.Errorf("turns: features: %w", err)
	}
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	if cut := RetentionCutoff(f, now); since.Before(cut) {
		return cut, nil
	}
	return since.UTC(), nil
}

// subjectLinks returns the identity links of the space naming one of s's handle hashes or
// profiles, oldest first.
func subjectLinks(ctx context.Context, idb bun.IDB, spaceID string, s erasure.Target) ([]models.IdentityLink, error) {
	hashes, profiles := nonEmpty(s.HandleHashes), nonEmpty(s.ProfileIDs)
	var out []models.IdentityLink
	for _, part := range []struct {
		column string
		values []string
	}{{"handle_hash", hashes}, {"profile_id", profiles}} {
		for _, vals := range chunks(part.values) {
			var rows []models.IdentityLink
			if err := idb.NewSelect().Model(&rows).
				Where("space_id = ? AND ? IN (?)", spaceID, bun.Ident(part.column), bun.In(vals)).Scan(ctx); err != nil {
				return nil, fmt.Errorf("turns: subject links: %w", err)
			}
			out = append(out, rows...)
		}
	}
	seen := map[string]bool{}
	uniq := out[:0]
	for _, l := range out {
		if !seen[l.ID] {
			seen[l.ID] = true
			uniq = append(uniq, l)
		}
	}
	sort.Slice(uniq, func(i, j int) bool {
		if !uniq[i].CreatedAt.Equal(uniq[j].CreatedAt) {
			return uniq[i].CreatedAt.Before(uniq[j].CreatedAt)
		}
		return uniq[i].ID < uniq[j].ID
	})
	return uniq, nil
}

// subjectTurns returns the turns of the conversations linked through links and the turns
// sealed under one of profileIDs, ordered by time then id.
func subjectTurns(ctx context.Context, idb bun.IDB, spaceID string, links []models.IdentityLink, profileIDs []string) ([]models.Turn, error) {
	scopes := map[string]bool{}
	var scopeList []string
	for _, l := range links {
		if !scopes[l.ScopeHash] {
			scopes[l.ScopeHash] = true
			scopeList = append(scopeList, l.ScopeHash)
		}
	}
	sort.Strings(scopeList)
	var out []models.Turn
	for _, part := range []struct {
		column string
		values []string
	}{{"scope_hash", scopeList}, {"profile_id", nonEmpty(profileIDs)}} {
		for _, vals := range chunks(part.values) {
			var rows []models.Turn
			if err := idb.NewSelect().Model(&rows).
				Where("space_id = ? AND ? IN (?)", spaceID, bun.Ident(part.column), bun.In(vals)).Scan(ctx); err != nil {
				return nil, fmt.Errorf("turns: subject turns: %w", err)
			}
			out = append(out, rows...)
		}
	}
	seen := map[string]bool{}
	uniq := out[:0]
	for _, t := range out {
		if !seen[t.ID] {
			seen[t.ID] = true
			uniq = append(uniq, t)
		}
	}
	sort.Slice(uniq, func(i, j int) bool {
		if !uniq[i].At.Equal(uniq[j].At) {
			return uniq[i].At.Before(uniq[j].At)
		}
		return uniq[i].ID < uniq[j].ID
	})
	return uniq, nil
}

// EraseSubject deletes, inside idb, the identity links naming one of s's handle hashes or
// profiles, and every turn of the conversations (and tasks) they link, shared conversations
// included (see the package's compliance notes), plus any turn sealed under one of s's
// profiles, and destroys those conversations' keys (so a backup's copies of their turns from
// before the link, sealed under them, no longer open: ER-1). It returns the ids deleted as
// KindTurn, KindIdentityLink and KindScopeKey (kinds with nothing deleted left out); a second
// call finds nothing.
func (s *Service) EraseSubject(ctx context.Context, idb bun.IDB, spaceID string, ref erasure.Target) (erasure.Reach, error) {
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
	scopes := make([]string, 0, len(links)+len(rows))
	for i, l := range links {
		linkIDs[i] = l.ID
		scopes = append(scopes, l.ScopeHash)
	}
	for _, r := range rows {
		scopes = append(scopes, r.ScopeHash)
	}
	return s.deleteByID(ctx, idb, turnIDs, linkIDs, scopes)
}

// EraseConversation deletes, inside idb, the turns and identity links of the conversation
// conversationID and destroys its key, and returns their ids as KindTurn, KindIdentityLink
// and KindScopeKey; a second call (or an empty id) finds nothing. Turns of the same id used
// as a task are not touched.
func (s *Service) EraseConversation(ctx context.Context, idb bun.IDB, spaceID, conversationID string) (erasure.Reach, error) {
	if conversationID == "" {
		return nil, nil
	}
	scopeHash := s.ScopeHash(spaceID, "conversation", conversationID)
	var turnIDs, linkIDs []string
	if err := idb.NewSelect().Model((*models.Turn)(nil)).Column("id").
		Where("space_id = ? AND scope_hash = ?", spaceID, scopeHash).Order("id ASC").Scan(ctx, &turnIDs); err != nil {
		return nil, fmt.Errorf("turns: conversation turns: %w", err)
	}
	if err := idb.NewSelect().Model((*models.IdentityLink)(nil)).Column("id").
		Where("space_id = ? AND scope_hash = ?", spaceID, scopeHash).Order("id ASC").Scan(ctx, &linkIDs); err != nil {
		return nil, fmt.Errorf("turns: conversation links: %w", err)
	}
	return s.deleteByID(ctx, idb, turnIDs, linkIDs, []string{scopeHash})
}

// deleteByID deletes the turns and links named, destroys the keys of the scopes named, and
// reports them. A key is destroyed before the transaction commits: should the commit fail,
// the retried step finds the same rows (now unreadable) and deletes them.
func (s *Service) deleteByID(ctx context.Context, idb bun.IDB, turnIDs, linkIDs, scopes []string) (erasure.Reach, error) {
	for _, ids := range chunks(turnIDs) {
		if _, err := idb.NewDelete().Model((*models.Turn)(nil)).Where("id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
			return nil, fmt.Errorf("turns: delete turns: %w", err)
		}
	}
	for _, ids := range chunks(linkIDs) {
		if _, err := idb.NewDelete().Model((*models.IdentityLink)(nil)).Where("id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
			return nil, fmt.Errorf("turns: delete links: %w", err)
		}
	}
	keyIDs, err := s.scopeKeys(ctx, scopes)
	if err != nil {
		return nil, err
	}
	for _, k := range keyIDs {
		if err := s.Keys.Destroy(ctx, k); err != nil {
			return nil, fmt.Errorf("turns: destroy conversation key: %w", err)
		}
	}
	r := erased(turnIDs, linkIDs)
	r.Add(KindScopeKey, keyIDs...)
	return r, nil
}

// scopeKeys returns, sorted and once each, the conversation keys of scopes that the key store
// still holds (existence only: a key is never opened to be found).
func (s *Service) scopeKeys(ctx context.Context, scopes []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, h := range scopes {
		k := ConversationKeyID(h)
		if h == "" || seen[k] {
			continue
		}
		seen[k] = true
		ok, err := s.Keys.Exists(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("turns: conversation key: %w", err)
		}
		if ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// erased reports turn and link ids as the certificate's items: one per kind that has any.
func erased(turnIDs, linkIDs []string) erasure.Reach {
	out := erasure.Reach{}
	out.Add(KindTurn, turnIDs...)
	out.Add(KindIdentityLink, linkIDs...)
	return out
}

// ExportSubject returns, read through idb, the identity links naming one of s's handle hashes
// or profiles (oldest first) and the masked turns of the conversations they link plus any turn
// sealed under one of s's profiles, unsealed, ordered by time. Turns past the space's
// retention (not yet swept) and turns whose key was destroyed are left out. Never nil slices.
func (s *Service) ExportSubject(ctx context.Context, idb bun.IDB, spaceID string, ref erasure.Target) ([]erasure.ExportedLink, []erasure.ExportedTurn, error) {
	links, err := subjectLinks(ctx, idb, spaceID, ref)
	if err != nil {
		return nil, nil, err
	}
	rows, err := subjectTurns(ctx, idb, spaceID, links, ref.ProfileIDs)
	if err != nil {
		return nil, nil, err
	}
	cut, err := s.notExpired(ctx, idb, spaceID, time.Time{})
	if err != nil {
		return nil, nil, err
	}
	outLinks := make([]erasure.ExportedLink, 0, len(links))
	for _, l := range links {
		outLinks = append(outLinks, erasure.ExportedLink{
			ID: l.ID, ScopeKind: l.ScopeKind, ScopeHash: l.ScopeHash, Status: l.Status,
			CreatedAt: l.CreatedAt.UTC(), UpdatedAt: l.UpdatedAt.UTC(),
		})
	}
	op := s.opener()
	outTurns := make([]erasure.ExportedTurn, 0, len(rows))
	for i := range rows {
		r := &rows[i]
		if r.At.Before(cut) {
			continue // past retention, not yet swept
		}
		text, ok, err := op.open(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		outTurns = append(outTurns, erasure.ExportedTurn{
			ID: r.ID, ScopeKind: r.ScopeKind, ScopeHash: r.ScopeHash, Speaker: r.Speaker, Text: text, At: r.At.UTC(),
			KeyID: r.KeyID, AgentVersion: r.AgentVersion,
		})
	}
	return outLinks, outTurns, nil
}

// SweepTurns deletes, inside idb, at most limit turns (500 when limit <= 0) of spaceID (every
// space when empty, in id order) whose time is before RetentionCutoff at now for that space's
// features document (turns.retention_days, 90 days by default), oldest first. It returns the
// count deleted per space and whether fewer than limit were deleted (nothing is left).
func (s *Service) SweepTurns(ctx context.Context, idb bun.IDB, spaceID string, now time.Time, limit int) (map[string]int, bool, error) {
	if limit <= 0 {
		limit = 500
	}
	spaceIDs := []string{spaceID}
	if spaceID == "" {
		spaceIDs = nil
		if err := idb.NewSelect().Model((*models.Space)(nil)).Column("id").Order("id ASC").Scan(ctx, &spaceIDs); err != nil {
			return nil, false, fmt.Errorf("turns: sweep spaces: %w", err)
		}
	}
	docs := spaces.Documents{DB: idb}
	counts := map[string]int{}
	removed := 0
	for _, sp := range spaceIDs {
		if removed >= limit {
			break
		}
		f, err := docs.Features(ctx, sp)
		if err != nil {
			return nil, false, fmt.Errorf("turns: sweep features: %w", err)
		}
		var ids []string
		if err := idb.NewSelect().Model((*models.Turn)(nil)).Column("id").
			Where("space_id = ? AND at < ?", sp, RetentionCutoff(f, now)).
			Order("at ASC", "id ASC").Limit(int64(limit-removed)).Scan(ctx, &ids); err != nil {
			return nil, false, fmt.Errorf("turns: sweep select: %w", err)
		}
		if len(ids) == 0 {
			continue
		}
		for _, part := range chunks(ids) {
			if _, err := idb.NewDelete().Model((*models.Turn)(nil)).Where("id IN (?)", bun.In(part)).Exec(ctx); err != nil {
				return nil, false, fmt.Errorf("turns: sweep delete: %w", err)
			}
		}
		counts[sp] = len(ids)
		removed += len(ids)
	}
	return counts, removed < limit, nil
}

// opener unseals stored turns, fetching each key once.
type opener struct {
	s    *Service
	keys map[string][]byte // key id -> key, nil when destroyed
}

func (s *Service) opener() *opener { return &opener{s: s, keys: map[string][]byte{}} }

// open returns r's masked text, or ok false when it was sealed under a destroyed key (its
// profile's, else its conversation's); a legacy row with neither is in clear.
func (o *opener) open(ctx context.Context, r *models.Turn) (string, bool, error) {
	keyID := r.ProfileID
	if keyID == "" {
		keyID = r.SealedKey
	}
	if keyID == "" {
		return string(r.Text), true, nil
	}
	key, cached := o.keys[keyID]
	if !cached {
		var err error
		key, err = o.s.Keys.DataKey(ctx, keyID, false)
		if errors.Is(err, keystore.ErrNoKey) {
			key = nil
		} else if err != nil {
			return "", false, fmt.Errorf("turns: data key: %w", err)
		}
		o.keys[keyID] = key
	}
	if key == nil {
		return "", false, nil
	}
	plain, err := keystore.Open(key, r.Text, []byte(r.ID))
	if err != nil {
		return "", false, fmt.Errorf("turns: unseal %s: %w", r.ID, err)
	}
	return string(plain), true, nil
}

func nonEmpty(list []string) []string {
	out := make([]string, 0, len(list))
	for _, x := range list {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

func chunks(ids []string) [][]string {
	var out [][]string
	for len(ids) > chunk {
		out = append(out, ids[:chunk])
		ids = ids[chunk:]
	}
	if len(ids) > 0 {
		out = append(out, ids)
	}
	return out
}
