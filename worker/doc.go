// Package worker runs the Temporal side of the service: New builds a worker with every
// workflow and activity registered (Register, RegisterCompliance), EnsureRetentionSchedule
// creates the retention sweep's Temporal Schedule, and Starter with ReconcileLoop restart the
// workflows of orphaned rows. `agentmemory worker` runs it alone, `agentmemory dev`
// in-process beside the API.
package worker
