package state

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Sealing (GOV-2, MS-4). A state tied to a customer (its scope is a subject, or its `subject`
// member names one) keeps its body and field_times sealed under that customer's data key, so
// destroying the key makes every copy unreadable, backups included.
//
// The key is named by the keyed hash of the customer's canonical handle (SubjectKeyID), not
// by a profile id: a state may be written before any profile holds the handle, and a
// profile's handles may change. Erasing a customer destroys the key of every handle hash of
// the customer (and the profile's own key). A state whose key is gone reads as never written
// (version 0). States of a conversation or task scope that name no customer are sealed under
// the conversation's key (keyIDFor; issue 29 §1), which a conversation erasure destroys.
//
// Every state with a scope also has its own key (erasure.StateKeyID of scope kind, scope
// hash and agent), which the state's delete (by scope or by subject, issue 29 §3) and an
// erasure deleting it by its content destroy. A state of an object or agent scope naming no
// customer is sealed under its own key alone ("\x00s1"); a customer's or a conversation's
// state under a key derived from both ("\x00s2", bothKey), so destroying either one (the
// erasure's, or the delete's) makes every copy unreadable. Everything is stored in clear
// when Service.Keys is nil. A state stored in clear, or sealed under one key by a version
// before the own keys, is sealed as it is written today at its next write (lazily).
// The keys cost a cached read no extra lookup: keystore.Cache keeps them, and compares the
// store's destroy generation once per request (keystore.ForRequest), shared by every key the
// request opens.

// sealedBodyPrefix starts a body sealed under one key (keyIDFor): JSON never starts with a
// NUL byte.
var sealedBodyPrefix = []byte("\x00s1")

// sealedBothPrefix starts a body sealed under the key derived from a customer's or a
// conversation's key and the state's own (bothKey).
var sealedBothPrefix = []byte("\x00s2")

// sealedTimesPrefix starts sealed field_times (base64 of the sealed bytes).
const sealedTimesPrefix = "s1:"

// isSealed reports whether a stored body is sealed (under one key or under two).
func isSealed(body []byte) bool {
	return bytes.HasPrefix(body, sealedBodyPrefix) || bytes.HasPrefix(body, sealedBothPrefix)
}

// SubjectKeyID names the data key sealing the states of the customer whose handle has the
// keyed hash subjectHash (the same hash as subjects.Service.HandleHash).
func SubjectKeyID(subjectHash string) string { return "sh_" + subjectHash }

// keyIDFor names the key sealing a state of agent under one key, as states sealed under
// "\x00s1" name it (issue 29 §1): the customer's (SubjectKeyID) when it names one; for a
// conversation or task scope naming none, the conversation's (erasure.ConversationKeyID of
// the scope hash, which turns share), destroyed by a conversation erasure; for any other
// scope (object, agent) naming none, the state's own (erasure.StateKeyID), destroyed by its
// delete; "" (stored in clear) only without a scope.
func keyIDFor(subjectHash, scopeKind, scopeHash, agent string) string {
	switch {
	case subjectHash != "":
		return SubjectKeyID(subjectHash)
	case scopeHash == "":
		return ""
	case scopeKind == "conversation" || scopeKind == "task":
		return erasure.ConversationKeyID(scopeHash)
	}
	return erasure.StateKeyID(scopeKind, scopeHash, agent)
}

// sealing names the keys a state is sealed under when it is written: outer, the customer's or
// the conversation's key ("" for an object or agent scope naming no customer), and own, the
// state's own key ("" without a scope). Both set: sealed under bothKey ("\x00s2"); one set:
// under that one ("\x00s1"); none: in clear.
type sealing struct{ outer, own string }

// sealingFor is how a state of agent is sealed when written today (sealing).
func sealingFor(subjectHash, scopeKind, scopeHash, agent string) sealing {
	one := keyIDFor(subjectHash, scopeKind, scopeHash, agent)
	if scopeHash == "" {
		return sealing{outer: one}
	}
	own := erasure.StateKeyID(scopeKind, scopeHash, agent)
	if one == own {
		return sealing{own: own}
	}
	return sealing{outer: one, own: own}
}

// ownKey is the state's own key (erasure.StateKeyID; "" without a scope): the key a delete of
// that state destroys.
func ownKey(subjectHash, scopeKind, scopeHash, agent string) string {
	return sealingFor(subjectHash, scopeKind, scopeHash, agent).own
}

// bothKey derives the key sealing a state under two keys: SHA-256 of a label and both keys
// (each 32 bytes), so opening needs both and destroying either loses it.
func bothKey(outer, own []byte) []byte {
	h := sha256.New()
	h.Write([]byte("agentmemory state key v2\x00"))
	h.Write(outer)
	h.Write(own)
	return h.Sum(nil)
}

// destroyOwnKeys destroys the own keys (ownKey) of the deleted states rows. Deletes and
// erasures call it inside their transaction, after the rows' delete: a rollback leaves rows
// that no longer open (read as never written), never a deleted row whose key survived.
func (s *Service) destroyOwnKeys(ctx context.Context, rows []removed) error {
	if s.Keys == nil {
		return nil
	}
	for _, r := range rows {
		if k := ownKey(r.SubjectHash, r.ScopeKind, r.ScopeHash, r.Agent); k != "" {
			if err := s.Keys.Destroy(ctx, k); err != nil {
				return fmt.Errorf("state: destroy key: %w", err)
			}
		}
	}
	return nil
}

// sealKey returns the key and body prefix sealing under sk (create: make missing keys, as a
// write does); a nil key with nil error means in clear. keystore.ErrNoKey when a key is gone
// and create is false.
func (s *Service) sealKey(ctx context.Context, sk sealing, create bool) ([]byte, []byte, error) {
	if s.Keys == nil || (sk.outer == "" && sk.own == "") {
		return nil, nil, nil
	}
	var keys [][]byte
	for _, id := range [...]string{sk.outer, sk.own} {
		if id == "" {
			continue
		}
		k, err := s.Keys.DataKey(ctx, id, create)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
	}
	if len(keys) == 2 {
		return bothKey(keys[0], keys[1]), sealedBothPrefix, nil
	}
	return keys[0], sealedBodyPrefix, nil
}

// seal returns body and field_times as stored for a row id sealed under sk (sealingFor; no
// key stores them in clear).
func (s *Service) seal(ctx context.Context, id string, sk sealing, body []byte, times string) ([]byte, string, error) {
	key, prefix, err := s.sealKey(ctx, sk, true)
	if err != nil {
		return nil, "", fmt.Errorf("state: data key: %w", err)
	}
	if key == nil {
		return body, times, nil
	}
	sb, err := keystore.Seal(key, body, []byte("state-body:"+id))
	if err != nil {
		return nil, "", fmt.Errorf("state: seal: %w", err)
	}
	st, err := keystore.Seal(key, []byte(times), []byte("state-times:"+id))
	if err != nil {
		return nil, "", fmt.Errorf("state: seal: %w", err)
	}
	return append(append([]byte{}, prefix...), sb...), sealedTimesPrefix + base64.StdEncoding.EncodeToString(st), nil
}

// openKey returns the key a sealed row opens with: under "\x00s2" the one derived from both
// of its keys (sealingFor), under "\x00s1" the one keyIDFor names. keystore.ErrNoKey when a
// key is gone.
func (s *Service) openKey(ctx context.Context, row *models.AgentState) ([]byte, int, error) {
	sk := sealingFor(row.SubjectHash, row.ScopeKind, row.ScopeHash, row.Agent)
	if bytes.HasPrefix(row.Body, sealedBothPrefix) {
		if sk.outer == "" || sk.own == "" {
			return nil, 0, keystore.ErrNoKey // sealed under two keys this row no longer names
		}
		key, _, err := s.sealKey(ctx, sk, false)
		return key, len(sealedBothPrefix), err
	}
	keyID := keyIDFor(row.SubjectHash, row.ScopeKind, row.ScopeHash, row.Agent)
	if keyID == "" {
		return nil, 0, keystore.ErrNoKey // sealed, but under no key this row can name
	}
	key, _, err := s.sealKey(ctx, sealing{own: keyID}, false)
	return key, len(sealedBodyPrefix), err
}

// Unseal opens row's body and field_times in place. It reports false when the row is sealed
// under a key that no longer exists (erased, or deleted) or no longer opens it: the caller
// treats such a row as never written. Clear rows are left as they are.
func (s *Service) Unseal(ctx context.Context, row *models.AgentState) (bool, error) {
	if !isSealed(row.Body) {
		return true, nil
	}
	if s.Keys == nil {
		return false, nil
	}
	key, skip, err := s.openKey(ctx, row)
	if errors.Is(err, keystore.ErrNoKey) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state: data key: %w", err)
	}
	body, err := keystore.Open(key, row.Body[skip:], []byte("state-body:"+row.ID))
	if err != nil {
		return false, nil // sealed under an older, destroyed key of the same name
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(row.FieldTimes, sealedTimesPrefix))
	if err != nil {
		return false, nil
	}
	times, err := keystore.Open(key, raw, []byte("state-times:"+row.ID))
	if err != nil {
		return false, nil
	}
	row.Body, row.FieldTimes = body, string(times)
	return true, nil
}

// openRow unseals row for the read and write paths; an unreadable row becomes an expired,
// empty one, which live() serves as version 0 and a write overwrites.
func (s *Service) openRow(ctx context.Context, row *models.AgentState) error {
	ok, err := s.Unseal(ctx, row)
	if err != nil {
		return err
	}
	if !ok {
		row.Body, row.FieldTimes, row.ExpiresAt = []byte("{}"), "{}", time.Time{}
	}
	return nil
}

// LiveFields returns the fields of an unsealed row still within retention at now under
// schema, with each field's last write; version is 0 when the whole state expired (WM-12).
func LiveFields(row *models.AgentState, schema spaces.ObjectType, now time.Time) (map[string]json.RawMessage, map[string]time.Time, int64) {
	fields, times, version := live(row, schema, now.UTC())
	return fields, times, version
}

// SweepResult counts what a retention batch removed, per space id.
type SweepResult struct {
	// Fields is the number of expired fields removed from stored states, per space.
	Fields map[string]int
	// States is the number of whole states deleted past retention.state, per space.
	States map[string]int
	// Last is the id of the last state examined (the cursor of the next batch); Done reports
	// that no state is left after it.
	Last string
	Done bool
}

// SweepFields removes expired fields (per-field retention counted from each field's own last
// write, WM-12) from the stored body of up to limit states of spaceID (every space when
// empty) with id > after, in id order, inside idb. Versions are kept: reads never served
// those fields anyway. A row changed meanwhile by a writer is skipped (its next write drops
// the field). Expiry is computed in UTC.
func (s *Service) SweepFields(ctx context.Context, idb bun.IDB, spaceID, after string, limit int, now time.Time) (SweepResult, error) {
	now = now.UTC()
	res := SweepResult{Fields: map[string]int{}, States: map[string]int{}, Last: after}
	var rows []models.AgentState
	q := idb.NewSelect().Model(&rows).Where("id > ?", after).Where("expires_at > ?", now).Order("id ASC").Limit(int64(limit))
	if spaceID != "" {
		q = q.Where("space_id = ?", spaceID)
	}
	if err := q.Scan(ctx); err != nil {
		return res, fmt.Errorf("state: sweep fields: %w", err)
	}
	res.Done = len(rows) < limit
	types := map[string]spaces.ObjectTypes{}
	for i := range rows {
		row := &rows[i]
		res.Last = row.ID
		ot, ok := types[row.SpaceID]
		if !ok {
			var err error
			if ot, err = s.Docs.ObjectTypes(ctx, row.SpaceID); err != nil {
				return res, err
			}
			types[row.SpaceID] = ot
		}
		schema, _ := ot.SchemaFor(row.Agent)
		subjectHash, version := row.SubjectHash, row.Version
		if ok, err := s.Unseal(ctx, row); err != nil || !ok {
			if err != nil {
				return res, err
			}
			continue // erased: nothing readable to sweep
		}
		var all map[string]json.RawMessage
		_ = json.Unmarshal(row.Body, &all) // written by this package as a JSON object; an unreadable one sweeps nothing
		fields, times, _ := live(row, schema, now)
		if len(fields) == len(all) {
			continue
		}
		canon := fields.Canonical()
		body, timesJSON, err := s.seal(ctx, row.ID, sealingFor(subjectHash, row.ScopeKind, row.ScopeHash, row.Agent), canon, encodeTimes(times))
		if err != nil {
			return res, err
		}
		r, err := idb.NewUpdate().Model((*models.AgentState)(nil)).
			Set("body = ?", body).Set("field_times = ?", timesJSON).Set("bytes = ?", len(canon)).
			Where("id = ? AND version = ?", row.ID, version).Exec(ctx)
		if err != nil {
			return res, fmt.Errorf("state: sweep fields: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 1 {
			res.Fields[row.SpaceID] += len(all) - len(fields)
		}
	}
	return res, nil
}

// DeleteExpired deletes up to limit states of spaceID (every space when empty) whose whole
// retention ended at or before now (UTC), inside idb, destroys the own key of each
// (erasure.StateKeyID, as Delete does), and counts them per space; Done reports that fewer
// than limit were left.
func (s *Service) DeleteExpired(ctx context.Context, idb bun.IDB, spaceID string, limit int, now time.Time) (SweepResult, error) {
	res := SweepResult{Fields: map[string]int{}, States: map[string]int{}}
	var rows []models.AgentState
	q := idb.NewSelect().Model(&rows).Column("id", "space_id").
		Where("expires_hour <= ? AND expires_at <= ?", ExpiresHour(now), now.UTC()).Order("id ASC").Limit(int64(limit))
	if spaceID != "" {
		q = q.Where("space_id = ?", spaceID)
	}
	if err := q.Scan(ctx); err != nil {
		return res, fmt.Errorf("state: sweep states: %w", err)
	}
	res.Done = len(rows) < limit
	for _, row := range rows {
		// Its version stays as its agent's floor (floors.go): a later write of the same scope
		// starts above it.
		gone, err := deleteStates(ctx, idb, "id = ? AND expires_at <= ?", row.ID, now.UTC())
		if err != nil {
			return res, fmt.Errorf("state: sweep states: %w", err)
		}
		// Its own key goes too, so a backup taken before the sweep holds only a row that no
		// longer opens (issue 29 §1). Destroyed before the batch commits: were it to roll
		// back, the row left is expired already, and an unopenable row reads as never
		// written (openRow), which is what an expired one answers anyway.
		if err := s.destroyOwnKeys(ctx, gone); err != nil {
			return res, fmt.Errorf("state: sweep states: %w", err)
		}
		res.States[row.SpaceID] += len(gone)
	}
	return res, nil
}
