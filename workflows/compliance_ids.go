// Package workflows holds the deterministic Temporal workflows. They carry ids and counts
// only; every side effect is an activity.
package workflows

// Workflow ids of the compliance workflows, derived from domain ids.

// ErasureWorkflowID is the workflow id of erasure erasureID.
func ErasureWorkflowID(erasureID string) string { return "erasure-" + erasureID }

// ExportWorkflowID is the workflow id of export exportID.
func ExportWorkflowID(exportID string) string { return "export-" + exportID }

// NoteErasureWorkflowID is the workflow id of an agent-note erasure request requestID.
func NoteErasureWorkflowID(requestID string) string { return "note-erasure-" + requestID }

// SweepWorkflowID is the workflow id of a sweep started on request (requestID unique).
func SweepWorkflowID(requestID string) string { return "retention-sweep-" + requestID }

// RetentionScheduleID is the id of the Temporal Schedule that runs RetentionSweepWorkflow.
const RetentionScheduleID = "agentmemory-retention-sweep"

// Sweep defaults: the batch size of one activity and how many batches run before the
// workflow continues as new (keeping its history small).
const (
	DefaultSweepBatch      = 500
	DefaultSweepMaxBatches = 50
)
