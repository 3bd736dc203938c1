package compliance_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/erasure"
)

// Issue 12 §2: every table and column holding sealed or hashed subject data (by the rule of
// erasure.Personal, over a freshly migrated database) is covered by a registered eraser or
// exempt with a reason.
func TestErasureCoverage(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		cols, err := erasure.PersonalColumns(context.Background(), e.DB)
		require.NoError(t, err)
		require.Contains(t, cols, erasure.Column{Table: "agent_states", Column: "subject_hash"}, "the rule sees the migrations")
		require.Contains(t, cols, erasure.Column{Table: "profiles", Column: "sealed"})
		require.Empty(t, e.Deps.Compliance.Registry().Uncovered(cols), "personal-data columns no eraser covers")
	})
}

// Issue 12 §2: a personal-data table added without registering an eraser fails the coverage
// check, and names the table.
func TestErasureCoverageCatchesUnregisteredStore(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		_, err := e.DB.ExecContext(ctx, "CREATE TABLE loyalty_cards (id TEXT PRIMARY KEY, space_id TEXT NOT NULL, subject_hash TEXT NOT NULL, sealed_note BYTEA)")
		require.NoError(t, err)
		cols, err := erasure.PersonalColumns(ctx, e.DB)
		require.NoError(t, err)
		require.Equal(t, []erasure.Column{{Table: "loyalty_cards", Column: "sealed_note"}, {Table: "loyalty_cards", Column: "subject_hash"}},
			e.Deps.Compliance.Registry().Uncovered(cols))
	})
}

// Issue 29 §4: every table of a freshly migrated database (SQLite and PostgreSQL) that can
// hold text or bytes is erased by a registered eraser (or the agent-note eraser) or is on
// erasure.AllowedTables with its reason; and every allowed table exists (no stale entry).
func TestErasureCoversEveryTextTable(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		tables, err := erasure.TextTables(context.Background(), e.DB)
		require.NoError(t, err)
		require.Contains(t, tables, "notes", "the schema is read off the migrated database")
		require.Empty(t, e.Deps.Compliance.Registry().UncoveredTables(tables, e.Deps.Compliance.Notes.Covers()),
			"tables holding text that no eraser covers and erasure.AllowedTables does not list")
		for name, reason := range erasure.AllowedTables {
			require.Contains(t, tables, name, "allowed table %s (%s) is not in the schema", name, reason)
			require.NotEmpty(t, reason)
		}
	})
}

// Issue 29 §4: a migration that adds a table with a text or blob column, and no eraser for
// it, fails the check, which names the table; a table of numbers only passes.
func TestErasureCoverageCatchesUncoveredTextTable(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		blob := "BLOB"
		if e.Engine != "sqlite" {
			blob = "BYTEA"
		}
		for _, ddl := range []string{
			"CREATE TABLE loyalty_notes (id TEXT PRIMARY KEY, space_id TEXT NOT NULL, note TEXT NOT NULL)",
			"CREATE TABLE loyalty_scans (id BIGINT PRIMARY KEY, scan " + blob + ")",
			"CREATE TABLE loyalty_totals (id BIGINT PRIMARY KEY, points BIGINT NOT NULL)",
		} {
			_, err := e.DB.ExecContext(ctx, ddl)
			require.NoError(t, err)
		}
		tables, err := erasure.TextTables(ctx, e.DB)
		require.NoError(t, err)
		require.Equal(t, []string{"loyalty_notes", "loyalty_scans"},
			e.Deps.Compliance.Registry().UncoveredTables(tables, e.Deps.Compliance.Notes.Covers()))
	})
}

// Issue 12 §3: the sweep's vacuum phase vacuums one table per batch on PostgreSQL (the
// erasure itself vacuums nothing there), the knowledge store's pgvector tables included,
// and is a single no-op batch on SQLite.
func TestSweepVacuumPhaseBatches(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		if e.Engine != "sqlite" {
			// A vector table of the knowledge store's (its name is what the phase looks for).
			_, err := e.DB.ExecContext(context.Background(), "CREATE TABLE knowledge_vec_3 (chunk_id TEXT PRIMARY KEY)")
			require.NoError(t, err)
		}
		// The list is derived from the erasers' coverage (issue 29 §4): the tables erasure
		// deletes rows of, each once.
		require.ElementsMatch(t, []string{"agent_states", "turns", "identity_links", "export_packages", "knowledge_documents",
			"knowledge_chunks", "knowledge_chunks_fts", "profiles", "profile_handles", "notes", "note_tags", "notes_fts",
			"note_requests", "note_proposals", "proposal_decisions", "agent_memory_exports", "boards", "board_versions", "board_subjects"}, e.Deps.Compliance.VacuumTables())
		batches, cursor := 0, ""
		for {
			out, err := e.Deps.Compliance.SweepBatch(context.Background(), "", compliance.PhaseVacuum, cursor, 10)
			require.NoError(t, err)
			batches++
			if out.Done {
				break
			}
			cursor = out.Cursor
			require.Less(t, batches, 100)
		}
		if e.Engine == "sqlite" {
			require.Equal(t, 1, batches)
		} else {
			// Every table of the list but the two SQLite-only full-text tables, and knowledge_vec_3.
			require.Equal(t, len(e.Deps.Compliance.VacuumTables())-2+1, batches, "every table and knowledge_vec_3")
		}
		require.NoError(t, e.Deps.Compliance.Checkpoint(context.Background()))
	})
}
