package quotas

import (
	"context"
	"fmt"
	"sort"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
)

// Fix is one counter Recount corrected: the table (quota_usage or note_source_counts), the
// space, the counter (a quota's name; "active_notes" for note_source_counts), its key (a scope
// kind, a knowledge base id, an agent source id; "(a conversation)" for a conversation's
// keyed hash, which is not shown) and the stored value it replaced with the counted one.
type Fix struct {
	Table   string `json:"table"`
	SpaceID string `json:"space_id"`
	Counter string `json:"counter"`
	Key     string `json:"key"`
	Was     int64  `json:"was"`
	Now     int64  `json:"now"`
}

// Report is what Recount did: how many counters it checked and the ones it fixed.
type Report struct {
	Checked int   `json:"checked"`
	Fixed   []Fix `json:"fixed"`
}

// truthSQL counts every quota from the rows, as the triggers of migrations 20261204140000 and
// 20261206040000 (boards) do.
const truthSQL = `SELECT space_id, 'states_per_space' AS quota, '' AS scope_key, count(*) AS used FROM agent_states GROUP BY space_id
UNION ALL SELECT space_id, 'states_per_scope_kind', scope_kind, count(*) FROM agent_states GROUP BY space_id, scope_kind
UNION ALL SELECT space_id, 'state_bytes_per_space', '', CAST(SUM(bytes) AS BIGINT) FROM agent_states GROUP BY space_id
UNION ALL SELECT space_id, 'turns_per_space', '', count(*) FROM turns GROUP BY space_id
UNION ALL SELECT space_id, 'turns_per_conversation', scope_hash, count(*) FROM turns GROUP BY space_id, scope_hash
UNION ALL SELECT space_id, 'documents_per_base', kb_id, count(*) FROM knowledge_documents WHERE status IN ('pending', 'ready') GROUP BY space_id, kb_id
UNION ALL SELECT space_id, 'chunks_per_base', kb_id, count(*) FROM knowledge_chunks GROUP BY space_id, kb_id
UNION ALL SELECT space_id, 'boards_per_space', '', count(*) FROM boards GROUP BY space_id`

// counter is one stored or counted value.
type counter struct {
	SpaceID  string `bun:"space_id"`
	Quota    string `bun:"quota"`
	ScopeKey string `bun:"scope_key"`
	Used     int64  `bun:"used"`
}

// Recount recomputes every quota counter (quota_usage) and every agent's count of active notes
// (note_source_counts, the notes cap's) from the rows, writes the ones that differ and reports
// them, in one transaction that holds off writers of the counted tables meanwhile (PostgreSQL:
// SHARE ROW EXCLUSIVE locks; SQLite: its write lock), so a count cannot move between reading
// the rows and writing it. Nothing changes when every counter is right.
func Recount(ctx context.Context, d *bun.DB) (Report, error) {
	var rep Report
	err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		rep = Report{Fixed: []Fix{}}
		if !db.IsSQLite(tx) {
			if _, err := tx.ExecContext(ctx, `LOCK TABLE agent_states, turns, knowledge_documents, knowledge_chunks, boards, notes, quota_usage, note_source_counts IN SHARE ROW EXCLUSIVE MODE`); err != nil {
				return fmt.Errorf("quotas: recount: lock: %w", err)
			}
		}
		if err := recountQuotas(ctx, tx, &rep); err != nil {
			return err
		}
		return recountNotes(ctx, tx, &rep)
	})
	return rep, err
}

// recountQuotas compares quota_usage with truthSQL inside tx and fixes the differences: a
// counted value is written, a stored keyed count with no rows left is deleted, a space-wide one
// set to 0.
func recountQuotas(ctx context.Context, tx bun.Tx, rep *Report) error {
	var truth, stored []counter
	if err := tx.NewRaw(truthSQL).Scan(ctx, &truth); err != nil {
		return fmt.Errorf("quotas: recount: count rows: %w", err)
	}
	if err := tx.NewRaw(`SELECT space_id, quota, scope_key, used FROM quota_usage`).Scan(ctx, &stored); err != nil {
		return fmt.Errorf("quotas: recount: read counts: %w", err)
	}
	return reconcile(truth, stored, rep, func(c counter, was int64) error {
		var err error
		if c.Used == 0 && c.ScopeKey != "" {
			_, err = tx.ExecContext(ctx, `DELETE FROM quota_usage WHERE space_id = ? AND quota = ? AND scope_key = ?`, c.SpaceID, c.Quota, c.ScopeKey)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO quota_usage (space_id, quota, scope_key, used) VALUES (?, ?, ?, ?)
ON CONFLICT (space_id, quota, scope_key) DO UPDATE SET used = excluded.used`, c.SpaceID, c.Quota, c.ScopeKey, c.Used)
		}
		if err != nil {
			return fmt.Errorf("quotas: recount: fix: %w", err)
		}
		key := c.ScopeKey
		if c.Quota == TurnsPerConversation {
			key = "(a conversation)"
		}
		rep.Fixed = append(rep.Fixed, Fix{Table: "quota_usage", SpaceID: c.SpaceID, Counter: c.Quota, Key: key, Was: was, Now: c.Used})
		return nil
	})
}

// recountNotes compares note_source_counts with the active notes per space and source inside
// tx and sets the ones that differ.
func recountNotes(ctx context.Context, tx bun.Tx, rep *Report) error {
	var truth, stored []counter
	if err := tx.NewRaw(`SELECT space_id, 'active_notes' AS quota, source_id AS scope_key, count(*) AS used FROM notes WHERE status = 'active' GROUP BY space_id, source_id`).
		Scan(ctx, &truth); err != nil {
		return fmt.Errorf("quotas: recount notes: %w", err)
	}
	if err := tx.NewRaw(`SELECT space_id, 'active_notes' AS quota, source_id AS scope_key, active AS used FROM note_source_counts`).Scan(ctx, &stored); err != nil {
		return fmt.Errorf("quotas: recount notes: %w", err)
	}
	return reconcile(truth, stored, rep, func(c counter, was int64) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO note_source_counts (space_id, source_id, active) VALUES (?, ?, ?)
ON CONFLICT (space_id, source_id) DO UPDATE SET active = excluded.active`, c.SpaceID, c.ScopeKey, c.Used); err != nil {
			return fmt.Errorf("quotas: recount notes: fix: %w", err)
		}
		rep.Fixed = append(rep.Fixed, Fix{Table: "note_source_counts", SpaceID: c.SpaceID, Counter: "active_notes", Key: c.ScopeKey, Was: was, Now: c.Used})
		return nil
	})
}

// reconcile compares the counters counted from the rows (truth) with the stored ones, counting
// each in rep.Checked, and calls fix for each that differs with the value to store (a stored
// counter with no rows left comes with Used 0) and the stored value it replaces.
func reconcile(truth, stored []counter, rep *Report, fix func(c counter, was int64) error) error {
	want := indexCounters(truth)
	have := indexCounters(stored)
	for _, k := range unionKeys(want, have) {
		rep.Checked++
		w, h := want[k], have[k]
		if w.Used == h.Used {
			continue
		}
		c := w
		if c.Quota == "" {
			c = h
			c.Used = 0
		}
		if err := fix(c, h.Used); err != nil {
			return err
		}
	}
	return nil
}

// indexCounters maps counters by space, quota and key.
func indexCounters(cs []counter) map[string]counter {
	out := make(map[string]counter, len(cs))
	for _, c := range cs {
		out[c.SpaceID+"\x00"+c.Quota+"\x00"+c.ScopeKey] = c
	}
	return out
}

// unionKeys returns the keys of a and b, each once, in order.
func unionKeys(a, b map[string]counter) []string {
	keys := sortedKeys(a)
	for _, k := range sortedKeys(b) {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
