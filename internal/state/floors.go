package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"github.com/uptrace/bun"
)

// Version floors (issue 29 §3, WM-5): a state's version never restarts. Every path that
// removes a state row (a delete, an erasure, the retention sweep, a write replacing an expired
// state) first raises agent_state_floors of its space and agent to the row's version, in the
// statement order floor then delete, so a crash between the two leaves only a higher floor.
// A state written afresh takes the floor + 1 as its first version (floorVersion), so a
// compare-and-swap holding any version of an earlier incarnation of the same scope and agent
// meets a higher version and answers 412. A space and agent that never lost a state have no
// floor: their first version is 1, and a scope never written still reads version 0 (WM-9).
//
// Known limit (PostgreSQL, READ COMMITTED): an insert whose statement began before a
// concurrent delete of a newer incarnation committed, and that waited on that row, takes the
// floor it saw at its start. That needs a write, a second fresh write and a delete of the
// first incarnation, all at once on one scope.

// floorVersion is the expression of a fresh state's first version: its space and agent's
// floor + 1 (1 when there is none). Its arguments: space id, agent.
const floorVersion = `(SELECT COALESCE(MAX(f.version), 0) + 1 FROM agent_state_floors AS f WHERE f.space_id = ? AND f.agent = ?)`

// raiseFloors raises the floors of the space and agent of every state row that where (a
// condition on agent_states, its arguments args) selects to the row's version, inside idb.
// Call it before deleting those rows, in the same transaction when there is one.
func raiseFloors(ctx context.Context, idb bun.IDB, where string, args ...any) error {
	q := `INSERT INTO agent_state_floors (space_id, agent, version)
SELECT space_id, agent, MAX(version) FROM agent_states WHERE ` + where + ` GROUP BY space_id, agent
ON CONFLICT (space_id, agent) DO UPDATE SET version = CASE WHEN excluded.version > agent_state_floors.version THEN excluded.version ELSE agent_state_floors.version END`
	if _, err := idb.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("state: raise version floors: %w", err)
	}
	return nil
}

// removed is a state row deleteStates deleted: its id, agent and last version.
type removed struct {
	ID          string `bun:"id"`
	Agent       string `bun:"agent"`
	Version     int64  `bun:"version"`
	ScopeKind   string `bun:"scope_kind"`
	ScopeHash   string `bun:"scope_hash"`
	SubjectHash string `bun:"subject_hash"`
}

// deleteStates raises the floors of the rows where selects (raiseFloors), then deletes them,
// inside idb, and returns what it deleted, in id order.
func deleteStates(ctx context.Context, idb bun.IDB, where string, args ...any) ([]removed, error) {
	if err := raiseFloors(ctx, idb, where, args...); err != nil {
		return nil, err
	}
	var rows []removed
	err := idb.NewRaw(`DELETE FROM agent_states WHERE `+where+` RETURNING id, agent, version, scope_kind, scope_hash, subject_hash`, args...).Scan(ctx, &rows)
	if err != nil && !errors.Is(err, sql.ErrNoRows) { // no rows: nothing was there to delete
		return nil, fmt.Errorf("state: delete states: %w", err)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	return rows, nil
}

// idsOf returns the ids of rows.
func idsOf(rows []removed) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}
