package activities

import "context"

// ExportFileRef names an agent-memory export file of a space (issue 33 §4).
type ExportFileRef struct {
	SpaceID  string
	ExportID string
}

// ExportFileResult counts what an agent-memory export file holds.
type ExportFileResult struct {
	Notes     int
	Proposals int
}

// BuildExportFile builds and seals an agent-memory export file (proposals.Service.
// BuildExportFile); a refusal is final (storeError), a database error retried.
func (a *Activities) BuildExportFile(ctx context.Context, in ExportFileRef) (ExportFileResult, error) {
	c, err := a.Proposals.BuildExportFile(ctx, in.SpaceID, in.ExportID)
	return ExportFileResult{Notes: c.Notes, Proposals: c.Proposals}, storeError(err)
}

// FailExportFile marks an agent-memory export file failed with reason.
func (a *Activities) FailExportFile(ctx context.Context, in FailRef) error {
	return storeError(a.Proposals.FailExportFile(ctx, in.SpaceID, in.ID, in.Reason))
}
