// Package turns stores the turns of conversations and tasks, masked at write (personal data
// replaced by typed placeholders), and the identity links that tie a conversation to a subject
// (AM-9). Turns are subject data: while a conversation is linked to a known profile, its turns
// are sealed under that subject's key (internal/keystore), so erasing the subject (destroying
// the key) erases them everywhere, backups included (GOV-2, MS-4). Raw text is never stored or
// logged, and a conversation or task id is kept only as a keyed hash.
package turns

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/quotas"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// Limits of a write.
const (
	// MaxBatch is the most turns one request may carry.
	MaxBatch = 500
	// MaxTextBytes is the most bytes of one turn's text.
	MaxTextBytes = 16 << 10
	// MaxIDLength is the most bytes of a conversation or task id.
	MaxIDLength = 200
	// Window is how far back a distillation reads a conversation (AM-9): 90 days.
	Window = 90 * 24 * time.Hour
)

// Speakers of a turn.
const (
	SpeakerCustomer = "customer"
	SpeakerAgent    = "agent"
	SpeakerSystem   = "system"
)

// Link statuses.
const (
	LinkConfirmed   = "confirmed"
	LinkUnconfirmed = "unconfirmed"
)

// Subjects is what the package needs from the subjects service: masking by the space's rules
// and finding a subject's handle.
type Subjects interface {
	// MaskText replaces personal data in text with typed placeholders.
	MaskText(ctx context.Context, spaceID, text string) (string, error)
	// Canonical returns a handle's canonical form (fault.Invalid when malformed).
	Canonical(ctx context.Context, spaceID, handle string) (string, error)
	// HandleHash returns the keyed hash a canonical handle is looked up by.
	HandleHash(spaceID, canonical string) string
}

// Service writes and reads turns and identity links.
type Service struct {
	DB       *bun.DB
	Subjects Subjects
	Hasher   keyed.Hasher
	Keys     keystore.Store
	// Receipts commits the receipts of reads (Read) in groups; nil: each in a transaction
	// of its own.
	Receipts *receipts.Log
	Now      func() time.Time
}

// Scope names a conversation or a task: exactly one of the two ids is set.
type Scope struct {
	ConversationID string `json:"conversation_id,omitempty"`
	TaskID         string `json:"task_id,omitempty"`
}

// KindID returns ("conversation"|"task", id), or a fault.Invalid naming the member when not
// exactly one id is given or the id is malformed.
func (s Scope) KindID() (string, string, error) {
	switch {
	case s.ConversationID != "" && s.TaskID != "":
		return "", "", fault.New(fault.Invalid, "invalid_member", "give conversation_id or task_id, not both").With("member", "task_id")
	case s.ConversationID != "":
		return "conversation", s.ConversationID, checkID("conversation_id", s.ConversationID)
	case s.TaskID != "":
		return "task", s.TaskID, checkID("task_id", s.TaskID)
	default:
		return "", "", fault.New(fault.Invalid, "invalid_member", "give conversation_id or task_id").With("member", "conversation_id")
	}
}

func checkID(member, id string) error {
	if len(id) > MaxIDLength || !utf8.ValidString(id) || strings.IndexFunc(id, unicode.IsControl) >= 0 || strings.TrimSpace(id) != id {
		return fault.New(fault.Invalid, "invalid_member", "%s must be 1-%d printable characters without surrounding spaces", member, MaxIDLength).With("member", member)
	}
	return nil
}

// ScopeHash returns the keyed hash a conversation or task id is stored under; it is the same
// hash working memory gives the scope (WM-3), so erasing a conversation finds both.
func (s *Service) ScopeHash(spaceID, kind, id string) string {
	return s.Hasher.Hash(spaceID, "scope:"+kind, id)
}

// Input is one turn of POST /v1/turns.
type Input struct {
	Scope
	// Speaker is customer, agent or system.
	Speaker string `json:"speaker"`
	// Text is the raw text; it is masked before it is stored.
	Text string `json:"text"`
	// At is RFC 3339; empty means now.
	At string `json:"at,omitempty"`
}

// Turn is a stored turn as the API answers it: Text is the masked text. KeyID and
// AgentVersion are its provenance (MS-5, QT-2): the key that wrote it and the request's
// Agent-Version header ("" when none was sent).
type Turn struct {
	ID string `json:"id"`
	Scope
	Speaker      string    `json:"speaker"`
	Text         string    `json:"text"`
	At           time.Time `json:"at"`
	KeyID        string    `json:"key_id"`
	AgentVersion string    `json:"agent_version"`
}

// authorize allows agent keys with scope context and person keys with role integration.
func authorize(p auth.Principal) error {
	if p.IsAgent() {
		if !p.HasScope(auth.ScopeContext) {
			return fault.New(fault.Forbidden, "scope_required", "this key lacks scope context")
		}
		return nil
	}
	return p.RequireRole(auth.RoleIntegration)
}

type prepared struct {
	row   models.Turn
	scope Scope
	text  string
}

// Write masks and stores turns for p (scope context or role integration), all or none, and
// returns them as stored (masked). Errors: fault.Forbidden (scope or role), fault.Invalid
// naming the member (turns[i].x for a batch), fault.Conflict quota_exceeded naming the quota
// (turns_per_space or turns_per_conversation, issue 34 §1) with nothing stored.
func (s *Service) Write(ctx context.Context, p auth.Principal, in []Input, batch bool) ([]Turn, error) {
	if err := authorize(p); err != nil {
		return nil, err
	}
	if len(in) == 0 || len(in) > MaxBatch {
		return nil, fault.New(fault.Invalid, "invalid_member", "turns must hold 1 to %d turns", MaxBatch).With("member", "turns")
	}
	now := s.Now().UTC()
	list := make([]prepared, 0, len(in))
	for i, t := range in {
		member := func(m string) string {
			if batch {
				return fmt.Sprintf("turns[%d].%s", i, m)
			}
			return m
		}
		pr, err := s.prepare(ctx, p, t, now)
		if fe := fault.As(err); fe != nil && fe.Details["member"] != nil {
			fe.Details["member"] = member(fe.Details["member"].(string))
			return nil, fe
		}
		if err != nil {
			return nil, err
		}
		list = append(list, pr)
	}
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		profiles := map[string]string{} // scope hash -> profile id ("" when none)
		keys := map[string][]byte{}     // key id -> key, fetched once per batch
		for i := range list {
			r := &list[i].row
			prof, ok := profiles[r.ScopeHash]
			if !ok {
				var err error
				if prof, err = linkedProfile(ctx, tx, r.SpaceID, r.ScopeHash); err != nil {
					return err
				}
				profiles[r.ScopeHash] = prof
			}
			if err := s.seal(ctx, r, prof, keys); err != nil {
				return err
			}
			if _, err := tx.NewInsert().Model(r).Exec(ctx); err != nil {
				return fmt.Errorf("turns: insert: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		// A quota (turns per space, per conversation or task) refused an insert: nothing of the
		// batch is stored (issue 34 §1).
		return nil, quotas.Refusal(ctx, s.DB, p.SpaceID, err)
	}
	out := make([]Turn, len(list))
	for i, pr := range list {
		out[i] = Turn{ID: pr.row.ID, Scope: pr.scope, Speaker: pr.row.Speaker, Text: pr.text, At: pr.row.At,
			KeyID: pr.row.KeyID, AgentVersion: pr.row.AgentVersion}
	}
	return out, nil
}

func (s *Service) prepare(ctx context.Context, p auth.Principal, t Input, now time.Time) (prepared, error) {
	kind, id, err := t.Scope.KindID()
	if err != nil {
		return prepared{}, err
	}
	switch t.Speaker {
	case SpeakerCustomer, SpeakerAgent, SpeakerSystem:
	default:
		return prepared{}, fault.New(fault.Invalid, "invalid_member", `speaker must be "customer", "agent" or "system"`).With("member", "speaker")
	}
	if t.Text == "" || len(t.Text) > MaxTextBytes || !utf8.ValidString(t.Text) {
		return prepared{}, fault.New(fault.Invalid, "invalid_member", "text must be 1 to %d bytes of UTF-8", MaxTextBytes).With("member", "text")
	}
	at := now
	if t.At != "" {
		at, err = time.Parse(time.RFC3339Nano, t.At)
		if err != nil {
			return prepared{}, fault.New(fault.Invalid, "invalid_member", "at must be an RFC 3339 time such as 2026-01-02T15:04:05Z").With("member", "at")
		}
		at = at.UTC()
	}
	masked, err := s.Subjects.MaskText(ctx, p.SpaceID, t.Text)
	if err != nil {
		return prepared{}, fmt.Errorf("turns: mask: %w", err)
	}
	row := models.Turn{
		ID: auth.NewID("turn"), SpaceID: p.SpaceID, ScopeKind: kind, ScopeHash: s.ScopeHash(p.SpaceID, kind, id),
		Speaker: t.Speaker, KeyID: p.KeyID, AgentVersion: p.AgentVersion, At: at.Truncate(time.Microsecond), CreatedAt: now,
		Text: []byte(masked),
	}
	return prepared{row: row, scope: t.Scope, text: masked}, nil
}

// ConversationKeyID is the key-store id of the key a conversation's (or task's) turns are
// sealed under while it is linked to no profile: erasure.ConversationKeyID.
func ConversationKeyID(scopeHash string) string { return erasure.ConversationKeyID(scopeHash) }

// seal puts the row's masked text under profileID's key, or, with no profile (or a profile
// whose key was destroyed), under the conversation's key, created on first use; a turn is
// never stored in clear (ER-1). keys caches the keys fetched during one call of the caller
// (key id -> key, nil for a destroyed profile key), so a batch asks the key store once per
// key, not once per turn.
func (s *Service) seal(ctx context.Context, r *models.Turn, profileID string, keys map[string][]byte) error {
	if profileID != "" {
		key, cached := keys[profileID]
		if !cached {
			var err error
			key, err = s.Keys.DataKey(ctx, profileID, false)
			if err != nil && !errors.Is(err, keystore.ErrNoKey) {
				return fmt.Errorf("turns: data key: %w", err)
			}
			keys[profileID] = key // nil when destroyed
		}
		if key != nil {
			return sealUnder(r, key, profileID, "")
		}
	}
	keyID := ConversationKeyID(r.ScopeHash)
	key, cached := keys[keyID]
	if !cached {
		var err error
		if key, err = s.Keys.DataKey(ctx, keyID, true); err != nil {
			return fmt.Errorf("turns: conversation key: %w", err)
		}
		keys[keyID] = key
	}
	return sealUnder(r, key, "", keyID)
}

// sealUnder replaces r's clear text by its sealing under key, recording which key it is.
func sealUnder(r *models.Turn, key []byte, profileID, sealedKey string) error {
	sealed, err := keystore.Seal(key, r.Text, []byte(r.ID))
	if err != nil {
		return fmt.Errorf("turns: seal: %w", err)
	}
	r.Text, r.ProfileID, r.SealedKey = sealed, profileID, sealedKey
	return nil
}

// linkedProfile returns the profile a scope is linked to (the oldest link to a known
// profile), or "".
func linkedProfile(ctx context.Context, db bun.IDB, spaceID, scopeHash string) (string, error) {
	var ids []string
	err := db.NewSelect().Model((*models.IdentityLink)(nil)).Column("profile_id").
		Where("space_id = ? AND scope_hash = ? AND profile_id <> ''", spaceID, scopeHash).
		Order("created_at", "id").Limit(1).Scan(ctx, &ids)
	if err != nil {
		return "", fmt.Errorf("turns: links: %w", err)
	}
	if len(ids) == 0 {
		return "", nil
	}
	return ids[0], nil
}

// LinkRequest is the body of POST /v1/identity-links.
type LinkRequest struct {
	Scope
	// Subject is a handle, kind:value (email:, phone:, document:, username:).
	Subject string `json:"subject"`
	// Status is confirmed or unconfirmed.
	Status string `json:"status"`
}

// LinkResult is the answer of POST /v1/identity-links: never the subject's handle.
type LinkResult struct {
	LinkID string `json:"link_id"`
	Status string `json:"status"`
	// Created is false when an existing link of the same conversation and subject was updated.
	Created bool `json:"created"`
}

// Link records (or updates the status of) the link between a conversation or task and a
// subject, for p (scope context or role integration), with an admin receipt. When the subject
// has a profile, the conversation's turns stored so far in clear are sealed under its key in
// the same transaction. Errors: fault.Forbidden, fault.Invalid naming the member.
func (s *Service) Link(ctx context.Context, p auth.Principal, req LinkRequest) (LinkResult, error) {
	l, err := s.planLink(ctx, p, req)
	if err != nil {
		return LinkResult{}, err
	}
	now := s.Now().UTC()
	var res LinkResult
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var ph []models.ProfileHandle
		if err := tx.NewSelect().Model(&ph).Where("space_id = ? AND handle_hash = ?", p.SpaceID, l.handleHash).Scan(ctx); err != nil {
			return fmt.Errorf("turns: find profile: %w", err)
		}
		profileID := ""
		if len(ph) > 0 {
			profileID = ph[0].ProfileID
		}
		r, action, err := upsertLink(ctx, tx, p, l, profileID, now)
		if err != nil {
			return err
		}
		res = r
		sealed := 0
		if profileID != "" {
			owner, err := linkedProfile(ctx, tx, p.SpaceID, l.scopeHash)
			if err != nil {
				return err
			}
			if sealed, err = s.sealClear(ctx, tx, p.SpaceID, l.scopeHash, owner); err != nil {
				return err
			}
		}
		_, err = receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: action, ActorKey: p.KeyID, ObjectIDs: []string{res.LinkID},
			Detail: map[string]any{"status": l.status, "scope_kind": l.kind, "turns_sealed": sealed},
		}, now)
		return err
	})
	return res, err
}

// linkPlan is a checked LinkRequest: the scope's kind and hash, the subject's handle hash and
// the status to record.
type linkPlan struct {
	kind, scopeHash, handleHash, status string
}

// planLink checks p's right and req (scope, status, subject), before any write. Errors:
// fault.Forbidden, fault.Invalid naming the member.
func (s *Service) planLink(ctx context.Context, p auth.Principal, req LinkRequest) (linkPlan, error) {
	if err := authorize(p); err != nil {
		return linkPlan{}, err
	}
	kind, id, err := req.Scope.KindID()
	if err != nil {
		return linkPlan{}, err
	}
	if req.Status != LinkConfirmed && req.Status != LinkUnconfirmed {
		return linkPlan{}, fault.New(fault.Invalid, "invalid_member", `status must be "confirmed" or "unconfirmed"`).With("member", "status")
	}
	canonical, err := s.Subjects.Canonical(ctx, p.SpaceID, req.Subject)
	if err != nil {
		if fe := fault.As(err); fe != nil {
			return linkPlan{}, fe.With("member", "subject")
		}
		return linkPlan{}, err
	}
	return linkPlan{
		kind: kind, scopeHash: s.ScopeHash(p.SpaceID, kind, id),
		handleHash: s.Subjects.HandleHash(p.SpaceID, canonical), status: req.Status,
	}, nil
}

// upsertLink inserts the link l describes, or updates the status and profile of the existing
// one of the same scope and handle, and returns the answer and the receipt's action
// (identity_link.create or .update).
func upsertLink(ctx context.Context, tx bun.Tx, p auth.Principal, l linkPlan, profileID string, now time.Time) (LinkResult, string, error) {
	var existing []models.IdentityLink
	if err := tx.NewSelect().Model(&existing).
		Where("space_id = ? AND scope_hash = ? AND handle_hash = ?", p.SpaceID, l.scopeHash, l.handleHash).Scan(ctx); err != nil {
		return LinkResult{}, "", fmt.Errorf("turns: load link: %w", err)
	}
	if len(existing) > 0 {
		if _, err := tx.NewUpdate().Model((*models.IdentityLink)(nil)).
			Set("status = ?, profile_id = ?, updated_at = ?", l.status, profileID, now).
			Where("id = ?", existing[0].ID).Exec(ctx); err != nil {
			return LinkResult{}, "", fmt.Errorf("turns: update link: %w", err)
		}
		return LinkResult{LinkID: existing[0].ID, Status: l.status}, "identity_link.update", nil
	}
	row := &models.IdentityLink{
		ID: auth.NewID("link"), SpaceID: p.SpaceID, ScopeKind: l.kind, ScopeHash: l.scopeHash,
		HandleHash: l.handleHash, ProfileID: profileID, Status: l.status, KeyID: p.KeyID,
		CreatedAt: now, UpdatedAt: now,
	}
	if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
		return LinkResult{}, "", fmt.Errorf("turns: insert link: %w", err)
	}
	return LinkResult{LinkID: row.ID, Status: row.Status, Created: true}, "identity_link.create", nil
}

// sealClear moves the scope's turns not yet under a profile's key (sealed under the
// conversation's key, or legacy clear rows) under profileID's key, and returns how many it
// moved. Turns whose conversation key is gone (unreadable) are left as they are.
func (s *Service) sealClear(ctx context.Context, tx bun.IDB, spaceID, scopeHash, profileID string) (int, error) {
	var rows []models.Turn
	if err := tx.NewSelect().Model(&rows).
		Where("space_id = ? AND scope_hash = ? AND profile_id = ''", spaceID, scopeHash).Scan(ctx); err != nil {
		return 0, fmt.Errorf("turns: load unlinked turns: %w", err)
	}
	op := s.opener()
	keys := map[string][]byte{}
	n := 0
	for i := range rows {
		r := &rows[i]
		text, ok, err := op.open(ctx, r)
		if err != nil {
			return 0, err
		}
		if !ok {
			continue // its conversation key is gone: nothing to move
		}
		r.Text = []byte(text)
		if err := s.seal(ctx, r, profileID, keys); err != nil {
			return 0, err
		}
		if _, err := tx.NewUpdate().Model((*models.Turn)(nil)).Set("text = ?, profile_id = ?, sealed_key = ?", r.Text, r.ProfileID, r.SealedKey).
			Where("id = ?", r.ID).Exec(ctx); err != nil {
			return 0, fmt.Errorf("turns: seal turn: %w", err)
		}
		if r.ProfileID != "" {
			n++
		}
	}
	return n, nil
}

// SealLegacy seals, inside idb, at most limit turns (500 when limit <= 0) still stored in
// clear (written before conversation keys existed: no profile, no sealed_key) under their
// conversation's key: the lazy re-seal of issue 29 §1, run by `agentmemory restore`. It
// returns how many it sealed; fewer than limit means none is left.
func (s *Service) SealLegacy(ctx context.Context, idb bun.IDB, limit int) (int, error) {
	if limit <= 0 {
		limit = 500
	}
	var rows []models.Turn
	if err := idb.NewSelect().Model(&rows).Where("profile_id = '' AND sealed_key = ''").
		Order("id ASC").Limit(int64(limit)).Scan(ctx); err != nil {
		return 0, fmt.Errorf("turns: load clear turns: %w", err)
	}
	keys := map[string][]byte{}
	for i := range rows {
		r := &rows[i]
		if err := s.seal(ctx, r, "", keys); err != nil {
			return 0, err
		}
		if _, err := idb.NewUpdate().Model((*models.Turn)(nil)).Set("text = ?, sealed_key = ?", r.Text, r.SealedKey).
			Where("id = ? AND profile_id = '' AND sealed_key = ''", r.ID).Exec(ctx); err != nil {
			return 0, fmt.Errorf("turns: re-seal turn: %w", err)
		}
	}
	return len(rows), nil
}

// Stored is a turn as the distillation reads it: speaker, masked text, time.
type Stored struct {
	Speaker string
	Text    string
	At      time.Time
}

// Recent returns the masked turns of the conversation (kind "conversation") or task (kind
// "task") id at or after since, oldest first. Turns past the space's retention (not yet
// swept) and turns whose subject key was destroyed (erased) are left out.
func (s *Service) Recent(ctx context.Context, spaceID, kind, id string, since time.Time) ([]Stored, error) {
	since, err := s.notExpired(ctx, s.DB, spaceID, since)
	if err != nil {
		return nil, err
	}
	var rows []models.Turn
	if err := s.DB.NewSelect().Model(&rows).
		Where("space_id = ? AND scope_hash = ? AND at >= ?", spaceID, s.ScopeHash(spaceID, kind, id), since.UTC()).
		Order("at", "id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("turns: list: %w", err)
	}
	out := make([]Stored, 0, len(rows))
	op := s.opener()
	for i := range rows {
		r := &rows[i]
		text, ok, err := op.open(ctx, r)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		out = append(out, Stored{Speaker: r.Speaker, Text: text, At: r.At.UTC()})
	}
	return out, nil
}

// Links counts a scope's identity links by status, and the subjects the scope reaches only
// through unconfirmed links (a subject is its profile when it has one, else its handle).
type Links struct {
	Confirmed   int
	Unconfirmed int
	// UnconfirmedSubjects counts the subjects every link of which is unconfirmed.
	UnconfirmedSubjects int
}

// OnlyUnconfirmed reports whether the scope reaches any subject only through unconfirmed
// links (AM-9: the model is then never called), whatever confirmed links it has to other
// subjects.
func (l Links) OnlyUnconfirmed() bool { return l.UnconfirmedSubjects > 0 }

// LinkStatus counts the identity links of the conversation or task id.
func (s *Service) LinkStatus(ctx context.Context, spaceID, kind, id string) (Links, error) {
	var rows []models.IdentityLink
	if err := s.DB.NewSelect().Model(&rows).Column("status", "handle_hash", "profile_id").
		Where("space_id = ? AND scope_hash = ?", spaceID, s.ScopeHash(spaceID, kind, id)).Scan(ctx); err != nil {
		return Links{}, fmt.Errorf("turns: links: %w", err)
	}
	var l Links
	confirmed := map[string]bool{} // subject -> reached through a confirmed link
	for _, r := range rows {
		subject := "h:" + r.HandleHash
		if r.ProfileID != "" {
			subject = "p:" + r.ProfileID
		}
		if r.Status == LinkConfirmed {
			l.Confirmed++
			confirmed[subject] = true
		} else {
			l.Unconfirmed++
			if _, ok := confirmed[subject]; !ok {
				confirmed[subject] = false
			}
		}
	}
	for _, ok := range confirmed {
		if !ok {
			l.UnconfirmedSubjects++
		}
	}
	return l, nil
}
