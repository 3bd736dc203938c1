package state

import (
	"bytes"
	"context"
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
// the conversation's key (keyIDFor; issue 29 §1), which a conversation erasure destroys;
// states of any other scope (object, agent) that name no customer under their own key
// (erasure.StateKeyID of scope kind, scope hash and agent), which the state's delete and an
// erasure deleting it by its content destroy. Everything is stored in clear when
// Service.Keys is nil. A state stored in clear before is sealed at its next write (lazily).
// The key costs a cached read no extra lookup: keystore.Cache keeps it, and compares the
// store's destroy generation once per request (keystore.ForRequest), shared by every key the
// request opens.

// sealedBodyPrefix starts a sealed body: JSON never starts with a NUL byte.
var sealedBodyPrefix = []byte("\x00s1")

// sealedTimesPrefix starts sealed field_times (base64 of the sealed bytes).
const sealedTimesPrefix = "s1:"

// SubjectKeyID names the data key sealing the states of the customer whose handle has the
// keyed hash subjectHash (the same hash as subjects.Service.HandleHash).
func SubjectKeyID(subjectHash string) string { return "sh_" + subjectHash }

// keyIDFor names the key sealing a state of agent (issue 29 §1): the customer's
// (SubjectKeyID) when it names one; for a conversation or task scope naming none, the
// conversation's (erasure.ConversationKeyID of the scope hash, which turns share), destroyed
// by a conversation erasure; for any other scope (object, agent) naming none, the state's own
// (erasure.StateKeyID), destroyed by its delete; "" (stored in clear) only without a scope.
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

// ownKey is the state's own key (erasure.StateKeyID) when it is the one sealing a state of
// agent (keyIDFor), "" otherwise: the key a delete of that state destroys.
func ownKey(subjectHash, scopeKind, scopeHash, agent string) string {
	if k := keyIDFor(subjectHash, scopeKind, scopeHash, agent); strings.HasPrefix(k, "ws_") {
		return k
	}
	return ""
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

// seal returns body and field_times as stored for a row id sealed under keyID (keyIDFor; ""
// stores them in clear).
func (s *Service) seal(ctx context.Context, id, keyID string, body []byte, times string) ([]byte, string, error) {
	if s.Keys == nil || keyID == "" {
		return body, times, nil
	}
	key, err := s.Keys.DataKey(ctx, keyID, true)
	if err != nil {
		return nil, "", fmt.Errorf("state: data key: %w", err)
	}
	sb, err := keystore.Seal(key, body, []byte("state-body:"+id))
	if err != nil {
		return nil, "", fmt.Errorf("state: seal: %w", err)
	}
	st, err := keystore.Seal(key, []byte(times), []byte("state-times:"+id))
	if err != nil {
		return nil, "", fmt.Errorf("state: seal: %w", err)
	}
	return append(append([]byte{}, sealedBodyPrefix...), sb...), sealedTimesPrefix + base64.StdEncoding.EncodeToString(st), nil
}

// Unseal opens row's body and field_times in place. It reports false when the row is sealed
// under a key that no longer exists (erased) or no longer opens it: the caller treats such a
// row as never written. Clear rows are left as they are.
func (s *Service) Unseal(ctx context.Context, row *models.AgentState) (bool, error) {
	if !bytes.HasPrefix(row.Body, sealedBodyPrefix) {
		return true, nil
	}
	if s.Keys == nil {
		return false, nil
	}
	keyID := keyIDFor(row.SubjectHash, row.ScopeKind, row.ScopeHash, row.Agent)
	if keyID == "" {
		return false, nil // sealed, but under no key this row can name
	}
	key, err := s.Keys.DataKey(ctx, keyID, false)
	if errors.Is(err, keystore.ErrNoKey) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state: data key: %w", err)
	}
	body, err := keystore.Open(key, row.Body[len(sealedBodyPrefix):], []byte("state-body:"+row.ID))
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
		body, timesJSON, err := s.seal(ctx, row.ID, keyIDFor(subjectHash, row.ScopeKind, row.ScopeHash, row.Agent), canon, encodeTimes(times))
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
// retention ended at or before now (UTC), inside idb, and counts them per space; Done reports
// that fewer than limit were left.
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
		res.States[row.SpaceID] += len(gone)
	}
	return res, nil
}
