package proposals

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// DefaultExportTTL is how long an agent-memory export file lives when Service.ExportTTL is
// zero: 7 days, as the subject package.
const DefaultExportTTL = 7 * 24 * time.Hour

// Statuses of an agent-memory export file.
const (
	ExportRunning   = "running"
	ExportCompleted = "completed"
	ExportFailed    = "failed"
)

// ExportFileRequest is the body of POST /v1/agent-memory/exports: the agent (a note's
// source_id) whose notes and proposals to export.
type ExportFileRequest struct {
	SourceID string `json:"source_id"`
}

// ExportFileCounts is how many note versions and proposals a file holds.
type ExportFileCounts struct {
	Notes     int `json:"notes"`
	Proposals int `json:"proposals"`
}

// ExportFileView is GET /v1/agent-memory/exports/{id}: Counts once completed.
type ExportFileView struct {
	ExportID    string            `json:"export_id"`
	SourceID    string            `json:"source_id"`
	Status      string            `json:"status"`
	CreatedAt   time.Time         `json:"created_at"`
	CompletedAt *time.Time        `json:"completed_at"`
	ExpiresAt   time.Time         `json:"expires_at"`
	Counts      *ExportFileCounts `json:"counts"`
}

// ExportFile is the content of an agent-memory export file: Export (notes and proposals of
// one agent) with the file's id, agent and expiry.
type ExportFile struct {
	ExportID  string    `json:"export_id"`
	SourceID  string    `json:"source_id"`
	ExpiresAt time.Time `json:"expires_at"`
	Export
}

var errExportNotFound = fault.New(fault.NotFound, "export_not_found", "no export with that id in this space (it may have expired or been erased)")

// RequestExportFile records a running export file of agent req.SourceID's notes and
// proposals for p (role admin) with a "notes.export.request" admin receipt, and returns its
// id; the caller starts AgentMemoryExportWorkflow. Errors: fault.Forbidden, fault.Invalid
// naming source_id.
func (s *Service) RequestExportFile(ctx context.Context, p auth.Principal, req ExportFileRequest) (string, error) {
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
		return "", err
	}
	src := req.SourceID
	if src == "" || len(src) > 200 || strings.TrimSpace(src) != src || strings.IndexFunc(src, unicode.IsControl) >= 0 {
		return "", fault.New(fault.Invalid, "invalid_member", "source_id must be 1-200 printable characters (a note's source_id)").With("member", "source_id")
	}
	ttl := s.ExportTTL
	if ttl <= 0 {
		ttl = DefaultExportTTL
	}
	now := s.now().UTC()
	row := &models.AgentMemoryExport{ID: auth.NewID("amx"), SpaceID: p.SpaceID, SourceID: src, Status: ExportRunning,
		RequestedBy: p.KeyID, Counts: "{}", CreatedAt: now, ExpiresAt: now.Add(ttl)}
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return fmt.Errorf("proposals: insert export: %w", err)
		}
		_, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{Kind: receipts.KindAdmin, Action: "notes.export.request",
			ActorKey: p.KeyID, ObjectIDs: []string{row.ID}, Detail: map[string]any{"source_id": src}}, now)
		return err
	})
	if err != nil {
		return "", err
	}
	return row.ID, nil
}

func (s *Service) loadExportFile(ctx context.Context, spaceID, id string) (*models.AgentMemoryExport, error) {
	var row models.AgentMemoryExport
	err := s.DB.NewSelect().Model(&row).Where("id = ? AND space_id = ?", id, spaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errExportNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("proposals: load export: %w", err)
	}
	return &row, nil
}

// GetExportFile returns an export file's status (role admin). Unknown, expired or erased
// is fault.NotFound "export_not_found".
func (s *Service) GetExportFile(ctx context.Context, p auth.Principal, id string) (ExportFileView, error) {
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
		return ExportFileView{}, err
	}
	row, err := s.loadExportFile(ctx, p.SpaceID, id)
	if err != nil {
		return ExportFileView{}, err
	}
	if !s.now().Before(row.ExpiresAt.UTC()) {
		return ExportFileView{}, errExportNotFound
	}
	v := ExportFileView{ExportID: row.ID, SourceID: row.SourceID, Status: row.Status, CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC()}
	if row.CompletedAt != nil {
		t := row.CompletedAt.UTC()
		v.CompletedAt = &t
		var c ExportFileCounts
		if err := json.Unmarshal([]byte(row.Counts), &c); err != nil {
			return ExportFileView{}, fault.New(fault.Conflict, "corrupt_record", "export %s: stored counts do not decode", row.ID)
		}
		v.Counts = &c
	}
	return v, nil
}

// ExportFileJSON returns the completed file of export id, opened with the agent's export
// key, and leaves a "notes.export.download" admin receipt (role admin). Unknown, expired or
// erased (the agent's notes were erased: key and row gone) is fault.NotFound; running or
// failed is fault.Conflict "export_not_ready".
func (s *Service) ExportFileJSON(ctx context.Context, p auth.Principal, id string) ([]byte, error) {
	if _, err := s.GetExportFile(ctx, p, id); err != nil {
		return nil, err
	}
	row, err := s.loadExportFile(ctx, p.SpaceID, id)
	if err != nil {
		return nil, err
	}
	if row.Status != ExportCompleted {
		return nil, fault.New(fault.Conflict, "export_not_ready", "the export is %s", row.Status)
	}
	key, err := s.Notes.Keys.DataKey(ctx, notes.AgentExportKeyID(row.SpaceID, row.SourceID), false)
	if errors.Is(err, keystore.ErrNoKey) {
		return nil, errExportNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("proposals: export key: %w", err)
	}
	plain, err := keystore.Open(key, row.Package, []byte("amx:"+row.ID))
	if err != nil {
		return nil, errExportNotFound
	}
	if err := receipts.Record(ctx, s.Notes.Receipts, s.DB, p.SpaceID, receipts.Entry{Kind: receipts.KindAdmin,
		Action: "notes.export.download", ActorKey: p.KeyID, ObjectIDs: []string{row.ID}}, s.now().UTC()); err != nil {
		return nil, err
	}
	return plain, nil
}

// BuildExportFile builds the file of a running export (load → gather the agent's notes and
// proposals → seal under the agent's export key → store), completing it with a
// "notes.export.complete" receipt holding only counts. Building a finished export again
// changes nothing. It returns the counts. Errors: "export_not_found", the stores'.
func (s *Service) BuildExportFile(ctx context.Context, spaceID, id string) (ExportFileCounts, error) {
	row, err := s.loadExportFile(ctx, spaceID, id)
	if err != nil {
		return ExportFileCounts{}, err
	}
	var c ExportFileCounts
	if row.Status != ExportRunning {
		return c, json.Unmarshal([]byte(row.Counts), &c)
	}
	now := s.now().UTC()
	file, err := s.gatherExportFile(ctx, row, now)
	if err != nil {
		return ExportFileCounts{}, err
	}
	c = ExportFileCounts{Notes: len(file.Notes), Proposals: len(file.Proposals)}
	sealed, err := s.sealExportFile(ctx, row, file)
	if err != nil {
		return ExportFileCounts{}, err
	}
	return c, s.storeExportFile(ctx, row, sealed, c, now)
}

// gatherExportFile reads the agent's note versions and proposals, opened.
func (s *Service) gatherExportFile(ctx context.Context, row *models.AgentMemoryExport, now time.Time) (ExportFile, error) {
	ns, err := s.Notes.ExportSourceNotes(ctx, s.DB, row.SpaceID, row.SourceID)
	if err != nil {
		return ExportFile{}, err
	}
	var props []models.NoteProposal
	if err := s.DB.NewSelect().Model(&props).Where("space_id = ? AND source_id = ?", row.SpaceID, row.SourceID).
		Order("created_at", "id").Scan(ctx); err != nil {
		return ExportFile{}, fmt.Errorf("proposals: export file: %w", err)
	}
	if props, err = noterows.OpenProposals(ctx, s.Keys, props); err != nil {
		return ExportFile{}, err
	}
	f := ExportFile{ExportID: row.ID, SourceID: row.SourceID, ExpiresAt: row.ExpiresAt.UTC(),
		Export: Export{SpaceID: row.SpaceID, ExportedAt: now, Notes: ns, Proposals: make([]Proposal, 0, len(props))}}
	for _, r := range props {
		f.Proposals = append(f.Proposals, toProposal(r))
	}
	return f, nil
}

// sealExportFile encodes f and seals it under the agent's export key (created on first use).
func (s *Service) sealExportFile(ctx context.Context, row *models.AgentMemoryExport, f ExportFile) ([]byte, error) {
	plain, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("proposals: encode export file: %w", err)
	}
	key, err := s.Notes.Keys.DataKey(ctx, notes.AgentExportKeyID(row.SpaceID, row.SourceID), true)
	if err != nil {
		return nil, fmt.Errorf("proposals: export key: %w", err)
	}
	sealed, err := keystore.Seal(key, plain, []byte("amx:"+row.ID))
	if err != nil {
		return nil, fmt.Errorf("proposals: seal export file: %w", err)
	}
	return sealed, nil
}

// storeExportFile completes the running row with its sealed file and counts and a
// "notes.export.complete" receipt (counts only), in one transaction; a row erased or
// finished meanwhile is left as it is.
func (s *Service) storeExportFile(ctx context.Context, row *models.AgentMemoryExport, sealed []byte, c ExportFileCounts, now time.Time) error {
	counts, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*models.AgentMemoryExport)(nil)).Set("status = ?", ExportCompleted).
			Set("package = ?", sealed).Set("counts = ?", string(counts)).Set("completed_at = ?", now).
			Where("id = ? AND status = ?", row.ID, ExportRunning).Exec(ctx)
		if err != nil {
			return fmt.Errorf("proposals: store export file: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // nil when erased or finished meanwhile
		}
		_, err = receipts.Append(ctx, tx, row.SpaceID, receipts.Entry{Kind: receipts.KindAdmin, Action: "notes.export.complete",
			ActorKey: row.RequestedBy, ObjectIDs: []string{row.ID}, Detail: map[string]any{"notes": c.Notes, "proposals": c.Proposals}}, now)
		return err
	})
}

// FailExportFile marks a running export file failed with a short reason code.
func (s *Service) FailExportFile(ctx context.Context, spaceID, id, reason string) error {
	_, err := s.DB.NewUpdate().Model((*models.AgentMemoryExport)(nil)).Set("status = ?", ExportFailed).
		Set("failure = ?", reason).Set("package = NULL").Where("id = ? AND space_id = ? AND status = ?", id, spaceID, ExportRunning).Exec(ctx)
	if err != nil {
		return fmt.Errorf("proposals: fail export file: %w", err)
	}
	return nil
}
