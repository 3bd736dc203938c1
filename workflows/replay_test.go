package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/agentmemory/agentmemory/workflows"
)

// TestDistillReplay replays a history recorded on a real Temporal dev server (a distillation
// approved by a reviewer; re-record with AGENTMEMORY_RECORD_HISTORY=1 go test ./worker/). A
// change to DistillWorkflow that breaks determinism fails here: guard such changes with
// workflow.GetVersion.
func TestDistillReplay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.DistillWorkflow)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "distill_approved.json")))
}

// TestRetentionSweepReplay replays two sweeps recorded on a real Temporal dev server: one
// from before the orphan reconcile step (no version marker: replays without it) and one with
// it (re-record with AGENTMEMORY_RECORD_SWEEP=<file> go test ./internal/compliance -run
// TestRetentionSweepReconcilesOrphans/sqlite), and one with the vacuum phase (version marker
// "vacuum-phase", retention_sweep_vacuum.json, recorded the same way). A change to
// RetentionSweepWorkflow that
// breaks determinism fails here.
func TestRetentionSweepReplay(t *testing.T) {
	for _, f := range []string{"retention_sweep_v0.json", "retention_sweep_reconcile.json", "retention_sweep_vacuum.json"} {
		t.Run(f, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(workflows.RetentionSweepWorkflow)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", f)))
		})
	}
}

// TestErasureReplay replays erasures recorded on a real Temporal dev server, from both
// branches of the "erasure-registry" switch. Fixed steps (before the registry drove the
// erasure): one from before the re-run rounds (no version marker: one round, Certify
// probes), one with them (version marker "erasure-rerun": a write during round 1, a second
// round, then the certificate; no knowledge step), and one with the knowledge step (version
// marker "erasure-knowledge"). Registry-driven (version marker "erasure-registry": the
// stores recorded on the erasure row, erased one by one through EraseStore): one round
// (erasure_registry.json) and two rounds after a write during the first
// (erasure_registry_rerun.json). Re-record with AGENTMEMORY_RECORD_ERASURE=<file>
// AGENTMEMORY_RECORD_ERASURE_TEST=<test> go test ./internal/compliance -run <test>/sqlite
// (erasure_rerun.json, erasure_registry_rerun.json:
// TestErasureRerunsWhenWrittenDuringTheFirstRound; erasure_knowledge.json,
// erasure_registry.json: TestSubjectErasureReachesKnowledge); erasure_v0.json,
// erasure_rerun.json and erasure_knowledge.json were recorded by earlier code and must
// never be re-recorded. With the export-sinks step (version marker "erasure-sinks": held at
// pending_sinks until a blocked directory sink caught up, then certified):
// erasure_sinks.json, TestErasureHeldAtPendingSinks/sqlite (the test name with its engine).
// A change to ErasureWorkflow that breaks determinism fails here.
func TestErasureReplay(t *testing.T) {
	for _, f := range []string{"erasure_v0.json", "erasure_rerun.json", "erasure_knowledge.json", "erasure_registry.json", "erasure_registry_rerun.json", "erasure_sinks.json"} {
		t.Run(f, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(workflows.ErasureWorkflow)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", f)))
		})
	}
}

// TestIngestReplay replays an IngestWorkflow history recorded on a real Temporal dev server (a
// document indexed; re-record with AGENTMEMORY_RECORD_INGEST=1 go test ./worker -run
// TestKnowledgeIngestWorkflow/sqlite). A change to IngestWorkflow that breaks determinism
// fails here: guard such changes with workflow.GetVersion.
func TestIngestReplay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.IngestWorkflow)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "knowledge_ingest.json")))
}

// TestNoteErasureReplay replays an agent-note erasure recorded on a real Temporal dev server
// with its checkpoint step (version marker "note-erasure-checkpoint"; re-record with
// AGENTMEMORY_RECORD_NOTE_ERASURE=note_erasure_checkpoint.json go test ./internal/compliance
// -run TestAgentNoteErasureEndToEnd/sqlite). A change to NoteErasureWorkflow that breaks
// determinism fails here.
func TestNoteErasureReplay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.NoteErasureWorkflow)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "note_erasure_checkpoint.json")))
}

// TestSinkReplay replays a SinkWorkflow history recorded on a real Temporal dev server: a
// directory sink delivered a batch, found nothing new and slept its poll, then ended when
// the sink left features export.sinks (re-record with AGENTMEMORY_RECORD_SINK=sink_removed.json
// go test ./internal/compliance -run TestSinkWorkflowEndsWhenItsSinkIsRemoved/sqlite). A
// change to SinkWorkflow that breaks determinism fails here: guard such changes with
// workflow.GetVersion.
func TestSinkReplay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.SinkWorkflow)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "sink_removed.json")))
}

// TestAgentMemoryExportReplay replays an AgentMemoryExportWorkflow history recorded on a real
// Temporal dev server: one agent's export file built and sealed by BuildExportFile (2 notes,
// 1 proposal; re-record with AGENTMEMORY_RECORD_AGENT_EXPORT=agent_memory_export.json go test
// ./internal/compliance -run '^TestAgentMemoryExportFile$/sqlite'). A change to
// AgentMemoryExportWorkflow that breaks determinism fails here: guard such changes with
// workflow.GetVersion.
func TestAgentMemoryExportReplay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.AgentMemoryExportWorkflow)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "agent_memory_export.json")))
}
