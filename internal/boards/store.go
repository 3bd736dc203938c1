package boards

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/boardrules"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/redact"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/strictjson"
	"github.com/agentmemory/agentmemory/models"
)

// store writes next (canon, its canonical text) as the board's next version inside tx: the
// board row (inserted at version 1, or updated at the version read: tx holds the space's
// receipt head, so no other board write of the space runs meanwhile), its history row (older
// rows beyond the type's history deleted) and its subject links. It returns the stored row.
func (s *Service) store(ctx context.Context, tx bun.Tx, t target, row *models.Board, next, written strictjson.Object, canon []byte, now time.Time) (*models.Board, error) {
	times := fieldTimes(row)
	for name := range written {
		times[name] = now
	}
	for name := range times {
		if _, ok := next[name]; !ok {
			delete(times, name)
		}
	}
	timesJSON, err := json.Marshal(times)
	if err != nil {
		return nil, err
	}
	expires := now.Add(t.schema.StateTTL())
	hashes := s.subjectHashes(t, next)
	if row == nil {
		id := auth.NewID("bd")
		body, err := s.seal(ctx, id, 1, hashes, canon)
		if err != nil {
			return nil, err
		}
		row = &models.Board{ID: id, SpaceID: t.spaceID, Type: t.typ, BoardHash: t.hash, Body: body,
			FieldTimes: string(timesJSON), Version: 1, Bytes: len(canon), Writers: addWriter("", t.agent),
			CreatedAt: now, UpdatedAt: now, ExpiresAt: expires}
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return nil, err
		}
	} else {
		prev := row.Version
		body, err := s.seal(ctx, row.ID, prev+1, hashes, canon)
		if err != nil {
			return nil, err
		}
		next := *row
		next.Body, next.FieldTimes, next.Version, next.Bytes = body, string(timesJSON), prev+1, len(canon)
		next.Writers, next.UpdatedAt, next.ExpiresAt = addWriter(row.Writers, t.agent), now, expires
		res, err := tx.NewUpdate().Model(&next).Column("body", "field_times", "version", "bytes", "writers", "updated_at", "expires_at").
			Where("id = ? AND version = ?", row.ID, prev).Exec(ctx)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return nil, fault.New(fault.Conflict, "board_busy", "the board changed during this write; retry")
		}
		row = &next
	}
	if err := s.keepHistory(ctx, tx, t, row, now); err != nil {
		return nil, err
	}
	return row, linkSubjects(ctx, tx, t, row.ID, hashes)
}

// keepHistory stores row's body as its version's history row and deletes the rows older than
// the type's history.
func (s *Service) keepHistory(ctx context.Context, tx bun.Tx, t target, row *models.Board, now time.Time) error {
	v := &models.BoardVersion{BoardID: row.ID, Version: row.Version, Body: row.Body, CreatedAt: now}
	if _, err := tx.NewInsert().Model(v).Exec(ctx); err != nil {
		return err
	}
	_, err := tx.NewDelete().Model((*models.BoardVersion)(nil)).
		Where("board_id = ? AND version <= ?", row.ID, row.Version-int64(t.schema.BoardHistory())).Exec(ctx)
	return err
}

// linkSubjects sets the board's subject links to hashes, the customers its subject fields
// name (keyed hashes of canonical handles, subjectHashes).
func linkSubjects(ctx context.Context, tx bun.Tx, t target, boardID string, hashes []string) error {
	if _, err := tx.NewDelete().Model((*models.BoardSubject)(nil)).Where("board_id = ?", boardID).Exec(ctx); err != nil {
		return err
	}
	if len(hashes) == 0 {
		return nil
	}
	rows := make([]models.BoardSubject, 0, len(hashes))
	for _, h := range hashes {
		rows = append(rows, models.BoardSubject{SpaceID: t.spaceID, BoardID: boardID, SubjectHash: h})
	}
	_, err := tx.NewInsert().Model(&rows).Exec(ctx)
	return err
}

// subjectHashes returns the keyed hashes of the handles body's subject fields name, sorted
// and distinct (values already checked by checkSubjects).
func (s *Service) subjectHashes(t target, body strictjson.Object) []string {
	seen := map[string]bool{}
	var out []string
	for name, f := range t.schema.Fields {
		if !f.Subject || body[name] == nil {
			continue
		}
		for _, h := range handlesOf(body[name]) {
			c, err := redact.CanonicalHandle(h, t.region)
			if err != nil {
				continue // checkSubjects refused it at write; a stored value read back is the same
			}
			hash := s.Hasher.Hash(t.spaceID, "subject", c)
			if !seen[hash] {
				seen[hash] = true
				out = append(out, hash)
			}
		}
	}
	sort.Strings(out)
	return out
}

// handlesOf reads a subject field's value: a string, an array of strings, or null (none).
func handlesOf(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil
		}
		return []string{one}
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	return nil
}

// checkSubjects refuses a subject field whose value is not a customer handle (or an array of
// them, or null): fault.Invalid naming body.<field>.
func checkSubjects(t target, body strictjson.Object) error {
	for name, raw := range body {
		if !t.schema.Fields[name].Subject {
			continue
		}
		var probe any
		if json.Unmarshal(raw, &probe) == nil && probe == nil {
			continue
		}
		handles := handlesOf(raw)
		ok := len(handles) > 0
		for _, h := range handles {
			if _, err := redact.CanonicalHandle(h, t.region); err != nil {
				ok = false
			}
		}
		if !ok {
			return invalid("body."+name, "a subject field holds a customer handle such as email:... or phone:... (or an array of them)")
		}
	}
	return nil
}

// fieldTimes returns each stored field's last write (the row's updated_at when missing).
func fieldTimes(row *models.Board) map[string]time.Time {
	out := map[string]time.Time{}
	if row == nil {
		return out
	}
	var stamps map[string]time.Time
	_ = json.Unmarshal([]byte(row.FieldTimes), &stamps) // unreadable stamps fall back to updated_at below
	body, err := strictjson.ParseObject([]byte(row.Body))
	if err != nil {
		return out
	}
	for name := range body {
		if at, ok := stamps[name]; ok {
			out[name] = at.UTC()
		} else {
			out[name] = row.UpdatedAt.UTC()
		}
	}
	return out
}

// liveFields returns the fields of row still within retention at now (WM-12's rules: the
// board lives the type's retention.state after its last write, a field with a shorter
// retention of its own that long after its own last write); none for no row.
func liveFields(row *models.Board, schema spaces.ObjectType, now time.Time) strictjson.Object {
	out := strictjson.Object{}
	if row == nil || !now.Before(row.ExpiresAt.UTC()) {
		return out
	}
	body, err := strictjson.ParseObject([]byte(row.Body))
	if err != nil {
		return out
	}
	times := fieldTimes(row)
	for name, raw := range body {
		if ttl := schema.FieldTTL(name); ttl < schema.StateTTL() && !now.Before(times[name].Add(ttl)) {
			continue
		}
		out[name] = strictjson.CanonicalValue(raw)
	}
	return out
}

// addWriter returns the writers list (JSON) with agent as its most recent entry, at most
// maxWriters long.
func addWriter(list, agent string) string {
	var names []string
	_ = json.Unmarshal([]byte(list), &names) // an unreadable list starts again
	kept := names[:0]
	for _, n := range names {
		if n != agent {
			kept = append(kept, n)
		}
	}
	kept = append(kept, agent)
	if len(kept) > maxWriters {
		kept = kept[len(kept)-maxWriters:]
	}
	b, _ := json.Marshal(kept) // a slice of strings always encodes
	return string(b)
}

// fieldNames lists the fields of the outcomes (for receipts: names, never values).
func settledDetail(outcomes []boardrules.Outcome) []map[string]any {
	out := make([]map[string]any, 0, len(outcomes))
	for _, o := range outcomes {
		m := map[string]any{"field": o.Field, "rule": o.Rule}
		if o.Rejected {
			m["rejected"] = true
		}
		out = append(out, m)
	}
	return out
}

// writeEntry is the receipt of a stored write: the board's id, its type, the version read
// and the one stored, and the rule of each settled field.
func writeEntry(t target, row *models.Board, ifVersion int64, outcomes []boardrules.Outcome) receipts.Entry {
	return receipts.Entry{Kind: receipts.KindBoard, Action: ActionWrite, ActorKey: t.keyID, ObjectIDs: []string{row.ID},
		Detail: map[string]any{"type": t.typ, "if_version": ifVersion, "version": row.Version, "settled": settledDetail(outcomes)}}
}

// refusedEntry is the receipt of a write refused as a conflict (nothing else changed).
func refusedEntry(t target, row *models.Board, ifVersion int64, outcomes []boardrules.Outcome) receipts.Entry {
	ids := []string{}
	if row != nil {
		ids = append(ids, row.ID)
	}
	return receipts.Entry{Kind: receipts.KindBoard, Action: ActionRefused, ActorKey: t.keyID, ObjectIDs: ids,
		Detail: map[string]any{"type": t.typ, "if_version": ifVersion, "version": versionOf(row), "settled": settledDetail(outcomes)}}
}
