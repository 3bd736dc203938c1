package compliance

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
)

// ExportRequest is the body of POST /v1/exports: the customer's handle.
type ExportRequest struct {
	Subject string `json:"subject"`
}

// ExportCounts is how many items of each kind a package holds.
type ExportCounts struct {
	Profiles      int `json:"profiles"`
	States        int `json:"states"`
	Fields        int `json:"fields"`
	Turns         int `json:"turns"`
	IdentityLinks int `json:"identity_links"`
	Receipts      int `json:"receipts"`
}

// ExportView is GET /v1/exports/{id}.
type ExportView struct {
	ExportID    string        `json:"export_id"`
	Status      string        `json:"status"`
	CreatedAt   time.Time     `json:"created_at"`
	CompletedAt *time.Time    `json:"completed_at"`
	ExpiresAt   time.Time     `json:"expires_at"`
	Counts      *ExportCounts `json:"counts"`
}

// Package is a subject's data package (GOV-3, WM-13): their profile, their states by declared
// field, identity links and masked turns, and the receipts that touched them.
type Package struct {
	ExportID      string             `json:"export_id"`
	SpaceID       string             `json:"space_id"`
	GeneratedAt   time.Time          `json:"generated_at"`
	ExpiresAt     time.Time          `json:"expires_at"`
	Profiles      []PackageProfile   `json:"profiles"`
	States        []PackageState     `json:"states"`
	IdentityLinks []ExportedLink     `json:"identity_links"`
	Turns         []ExportedTurn     `json:"turns"`
	Receipts      []receipts.Receipt `json:"receipts"`
	NotCovered    []string           `json:"not_covered"`
}

// PackageProfile is a profile in a package.
type PackageProfile struct {
	ID        string    `json:"profile_id"`
	Name      string    `json:"name"`
	Handles   []string  `json:"handles"`
	CreatedAt time.Time `json:"created_at"`
}

// PackageState is one working state with its fields as declared.
type PackageState struct {
	ID        string         `json:"state_id"`
	Agent     string         `json:"agent"`
	ScopeKind string         `json:"scope_kind"`
	Version   int64          `json:"version"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	ExpiresAt time.Time      `json:"expires_at"`
	Fields    []PackageField `json:"fields"`
}

// PackageField is one field of a state: its value (masked at write when pii), its declared
// type, pii flag and sensitivity, its last write and when it expires.
type PackageField struct {
	Field       string          `json:"field"`
	Value       json.RawMessage `json:"value"`
	Type        string          `json:"type"`
	PII         bool            `json:"pii"`
	Sensitivity string          `json:"sensitivity"`
	WrittenAt   time.Time       `json:"written_at"`
	ExpiresAt   time.Time       `json:"expires_at"`
}

// RequestExport records a running export of the subject's data for p (role compliance) with
// an "export.request" compliance receipt, and returns its id; the caller starts the workflow.
// Errors: fault.Forbidden, fault.Invalid.
func (s *Service) RequestExport(ctx context.Context, p auth.Principal, req ExportRequest) (string, error) {
	if err := MayRequest(p); err != nil {
		return "", err
	}
	c, err := s.Subjects.Canonical(ctx, p.SpaceID, strings.TrimSpace(req.Subject))
	if err != nil {
		return "", fault.New(fault.Invalid, "invalid_handle", "subject is a customer handle such as email:... or phone:...").With("member", "subject")
	}
	ttl := s.ExportTTL
	if ttl <= 0 {
		ttl = DefaultExportTTL
	}
	now := s.now()
	row := &models.ExportPackage{
		ID: auth.NewID("ex"), SpaceID: p.SpaceID, SubjectHash: s.Subjects.HandleHash(p.SpaceID, c),
		Status: StatusRunning, RequestedBy: p.KeyID, Counts: "{}", CreatedAt: now, ExpiresAt: now.Add(ttl),
	}
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return fmt.Errorf("compliance: insert export: %w", err)
		}
		_, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindCompliance, Action: "export.request", ActorKey: p.KeyID, ObjectIDs: []string{row.ID},
		}, now)
		return err
	})
	if err != nil {
		return "", err
	}
	return row.ID, nil
}

func (s *Service) loadExport(ctx context.Context, idb bun.IDB, spaceID, id string) (*models.ExportPackage, error) {
	var row models.ExportPackage
	err := idb.NewSelect().Model(&row).Where("id = ? AND space_id = ?", id, spaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "export_not_found", "no export with that id in this space (it may have expired or been erased)")
	}
	if err != nil {
		return nil, fmt.Errorf("compliance: load export: %w", err)
	}
	return &row, nil
}

// GetExport returns an export's status (role compliance). Unknown, expired or erased is
// fault.NotFound "export_not_found".
func (s *Service) GetExport(ctx context.Context, p auth.Principal, id string) (ExportView, error) {
	if err := p.RequireRole(auth.RoleCompliance); err != nil {
		return ExportView{}, err
	}
	row, err := s.loadExport(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return ExportView{}, err
	}
	if !s.now().Before(row.ExpiresAt.UTC()) {
		return ExportView{}, fault.New(fault.NotFound, "export_not_found", "no export with that id in this space (it may have expired or been erased)")
	}
	v := ExportView{ExportID: row.ID, Status: row.Status, CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC()}
	if row.Status == StatusCompleted {
		gone, err := s.packageErased(ctx, row)
		if err != nil {
			return ExportView{}, err
		}
		if gone {
			// Completed inside an erasure's window: the subject key is destroyed, so the
			// package can never be read. It reads failed, never completed (issue 12 §1).
			if err := s.failExport(ctx, p.SpaceID, id, StatusCompleted, "export_erased"); err != nil {
				return ExportView{}, err
			}
			v.Status = StatusFailed
			return v, nil
		}
	}
	if row.CompletedAt != nil {
		t := row.CompletedAt.UTC()
		v.CompletedAt = &t
		var c ExportCounts
		if err := json.Unmarshal([]byte(row.Counts), &c); err != nil {
			return ExportView{}, fault.New(fault.Conflict, "corrupt_record", "export %s: stored counts do not decode", row.ID)
		}
		v.Counts = &c
	}
	return v, nil
}

// plainPackage reports whether row's package was stored unsealed: the package of a handle
// the service knows nothing of (no key exists, nothing found) is stored as its JSON, so that
// exporting an unknown handle creates no subject key.
func plainPackage(row *models.ExportPackage) bool {
	var p Package
	return json.Valid(row.Package) && json.Unmarshal(row.Package, &p) == nil && p.ExportID == row.ID
}

// packageErased reports whether a completed export's package can no longer be opened
// because the subject's key was destroyed (an erasure ran after it was sealed).
func (s *Service) packageErased(ctx context.Context, row *models.ExportPackage) (bool, error) {
	if plainPackage(row) {
		return false, nil
	}
	_, err := s.Keys.DataKey(ctx, state.SubjectKeyID(row.SubjectHash), false)
	if errors.Is(err, keystore.ErrNoKey) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("compliance: data key: %w", err)
	}
	return false, nil
}

// PackageJSON returns the completed package of export id, opened with the subject's key,
// and leaves an "export.download" receipt (role compliance). Unknown, expired or erased is
// fault.NotFound; still running or failed is fault.Conflict "export_not_ready".
func (s *Service) PackageJSON(ctx context.Context, p auth.Principal, id string) ([]byte, error) {
	if _, err := s.GetExport(ctx, p, id); err != nil {
		return nil, err
	}
	row, err := s.loadExport(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return nil, err
	}
	if row.Status != StatusCompleted {
		return nil, fault.New(fault.Conflict, "export_not_ready", "the export is %s", row.Status)
	}
	plain := row.Package
	if !plainPackage(row) {
		key, err := s.Keys.DataKey(ctx, state.SubjectKeyID(row.SubjectHash), false)
		if errors.Is(err, keystore.ErrNoKey) {
			return nil, fault.New(fault.NotFound, "export_not_found", "no export with that id in this space (it may have expired or been erased)")
		}
		if err != nil {
			return nil, fmt.Errorf("compliance: data key: %w", err)
		}
		if plain, err = keystore.Open(key, row.Package, []byte("export:"+row.ID)); err != nil {
			return nil, fault.New(fault.NotFound, "export_not_found", "no export with that id in this space (it may have expired or been erased)")
		}
	}
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindCompliance, Action: "export.download", ActorKey: p.KeyID, ObjectIDs: []string{row.ID},
		}, s.now())
		return err
	})
	if err != nil {
		return nil, err
	}
	return plain, nil
}

// subjectScope returns the profiles holding the handle hash and every handle hash of theirs
// (with the given one).
func subjectScope(ctx context.Context, idb bun.IDB, spaceID, hash string) (profileIDs, hashes []string, err error) {
	if err := idb.NewSelect().Model((*models.ProfileHandle)(nil)).Column("profile_id").
		Where("space_id = ? AND handle_hash = ?", spaceID, hash).Scan(ctx, &profileIDs); err != nil {
		return nil, nil, fmt.Errorf("compliance: resolve profile: %w", err)
	}
	if len(profileIDs) > 0 {
		if err := idb.NewSelect().Model((*models.ProfileHandle)(nil)).Column("handle_hash").
			Where("space_id = ? AND profile_id IN (?)", spaceID, bun.In(profileIDs)).Scan(ctx, &hashes); err != nil {
			return nil, nil, fmt.Errorf("compliance: resolve handles: %w", err)
		}
	}
	if !slices.Contains(hashes, hash) {
		hashes = append(hashes, hash)
	}
	sort.Strings(hashes)
	return profileIDs, hashes, nil
}

// BuildExport builds the package of a running export, seals it under the subject's key
// (state.SubjectKeyID of the requested handle) and completes the export with an
// "export.complete" receipt holding only counts. Building a completed export again changes
// nothing. It returns the counts.
func (s *Service) BuildExport(ctx context.Context, spaceID, id string) (ExportCounts, error) {
	row, err := s.loadExport(ctx, s.DB, spaceID, id)
	if err != nil {
		return ExportCounts{}, err
	}
	if row.Status != StatusRunning {
		var c ExportCounts
		if err := json.Unmarshal([]byte(row.Counts), &c); err != nil {
			return ExportCounts{}, fault.New(fault.Conflict, "corrupt_record", "export %s: stored counts do not decode", row.ID)
		}
		return c, nil
	}
	now := s.now()
	pkg := Package{
		ExportID: id, SpaceID: spaceID, GeneratedAt: now, ExpiresAt: row.ExpiresAt.UTC(),
		Profiles: []PackageProfile{}, States: []PackageState{}, IdentityLinks: []ExportedLink{},
		Turns: []ExportedTurn{}, Receipts: []receipts.Receipt{}, NotCovered: []string{},
	}
	profileIDs, hashes, err := subjectScope(ctx, s.DB, spaceID, row.SubjectHash)
	if err != nil {
		return ExportCounts{}, err
	}
	var counts ExportCounts
	touched := []string{}
	for _, pid := range profileIDs {
		prof, err := s.Subjects.Get(ctx, spaceID, pid)
		if fault.As(err) != nil {
			continue
		}
		if err != nil {
			return ExportCounts{}, err
		}
		pkg.Profiles = append(pkg.Profiles, PackageProfile{ID: prof.ID, Name: prof.Name, Handles: prof.Handles, CreatedAt: prof.CreatedAt})
		touched = append(touched, prof.ID)
	}
	types, err := s.Docs.ObjectTypes(ctx, spaceID)
	if err != nil {
		return ExportCounts{}, err
	}
	var rows []models.AgentState
	if err := s.DB.NewSelect().Model(&rows).Where("space_id = ? AND subject_hash IN (?)", spaceID, bun.In(hashes)).
		Order("id ASC").Scan(ctx); err != nil {
		return ExportCounts{}, fmt.Errorf("compliance: export states: %w", err)
	}
	for i := range rows {
		r := &rows[i]
		ok, err := s.State.Unseal(ctx, r)
		if err != nil {
			return ExportCounts{}, err
		}
		if !ok {
			continue
		}
		schema, _ := types.SchemaFor(r.Agent)
		fields, times, version := state.LiveFields(r, schema, now)
		if version == 0 {
			continue
		}
		ps := PackageState{ID: r.ID, Agent: r.Agent, ScopeKind: r.ScopeKind, Version: version,
			CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(), Fields: []PackageField{}}
		names := make([]string, 0, len(fields))
		for n := range fields {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			f := schema.Fields[n]
			sens := f.Sensitivity
			if sens == "" {
				sens = "low"
			}
			ps.Fields = append(ps.Fields, PackageField{Field: n, Value: fields[n], Type: f.Type, PII: f.PII,
				Sensitivity: sens, WrittenAt: times[n].UTC(), ExpiresAt: times[n].UTC().Add(schema.FieldTTL(n))})
		}
		counts.Fields += len(ps.Fields)
		pkg.States = append(pkg.States, ps)
		touched = append(touched, r.ID)
	}
	if s.TurnExports != nil {
		links, turns, err := s.TurnExports.ExportSubject(ctx, s.DB, spaceID, SubjectRef{ProfileIDs: profileIDs, HandleHashes: hashes})
		if err != nil {
			return ExportCounts{}, err
		}
		pkg.IdentityLinks, pkg.Turns = append(pkg.IdentityLinks, links...), append(pkg.Turns, turns...)
		for _, l := range links {
			touched = append(touched, l.ID)
		}
	} else {
		pkg.NotCovered = append(pkg.NotCovered, KindIdentityLink, KindTurn)
	}
	if _, err := receipts.Seal(ctx, s.DB, spaceID); err != nil { // every committed receipt has its seq
		return ExportCounts{}, err
	}
	if pkg.Receipts, err = touchedReceipts(ctx, s.DB, spaceID, touched); err != nil {
		return ExportCounts{}, err
	}
	counts.Profiles, counts.States, counts.Turns = len(pkg.Profiles), len(pkg.States), len(pkg.Turns)
	counts.IdentityLinks, counts.Receipts = len(pkg.IdentityLinks), len(pkg.Receipts)
	plain, err := json.Marshal(pkg)
	if err != nil {
		return ExportCounts{}, fmt.Errorf("compliance: encode package: %w", err)
	}
	// A handle the service knows nothing of gets no subject key: its package holds nothing
	// personal (empty lists, no receipts) and is stored as its JSON. Otherwise the package is
	// sealed under the subject's existing key; a key destroyed meanwhile (an erasure ran) is
	// never recreated: the export fails with "export_erased".
	empty := counts == ExportCounts{}
	key, err := s.Keys.DataKey(ctx, state.SubjectKeyID(row.SubjectHash), false)
	sealed := plain
	switch {
	case errors.Is(err, keystore.ErrNoKey) && empty:
	case errors.Is(err, keystore.ErrNoKey):
		if ferr := s.failExport(ctx, spaceID, id, StatusRunning, "export_erased"); ferr != nil {
			return ExportCounts{}, ferr
		}
		return ExportCounts{}, fault.New(fault.Conflict, "export_erased", "the subject was erased while the export ran")
	case err != nil:
		return ExportCounts{}, fmt.Errorf("compliance: data key: %w", err)
	default:
		if sealed, err = keystore.Seal(key, plain, []byte("export:"+id)); err != nil {
			return ExportCounts{}, fmt.Errorf("compliance: seal package: %w", err)
		}
	}
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*models.ExportPackage)(nil)).Set("status = ?", StatusCompleted).
			Set("package = ?", sealed).Set("counts = ?", mustJSON(counts)).Set("completed_at = ?", now).
			Where("id = ? AND status = ?", id, StatusRunning).Exec(ctx)
		if err != nil {
			return fmt.Errorf("compliance: store package: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("compliance: store package: %w", err)
		}
		if n == 0 {
			return nil // erased or completed meanwhile
		}
		var detail map[string]any
		if err := json.Unmarshal([]byte(mustJSON(counts)), &detail); err != nil {
			return fmt.Errorf("compliance: export detail: %w", err)
		}
		_, err = receipts.Append(ctx, tx, spaceID, receipts.Entry{
			Kind: receipts.KindCompliance, Action: "export.complete", ActorKey: row.RequestedBy,
			ObjectIDs: []string{id}, Detail: detail,
		}, now)
		return err
	})
	return counts, err
}

// touchedReceipts returns the space's receipts naming any of ids, in chain order (at most
// 10,000).
func touchedReceipts(ctx context.Context, idb bun.IDB, spaceID string, ids []string) ([]receipts.Receipt, error) {
	out := []receipts.Receipt{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []models.Receipt
	q := idb.NewSelect().Model(&rows).Column("seq").Where("space_id = ?", spaceID)
	q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		for _, id := range ids {
			q = q.WhereOr("object_ids LIKE ?", "%"+mustJSON(id)+"%")
		}
		return q
	})
	if err := q.Order("seq ASC").Limit(10000).Scan(ctx); err != nil {
		return nil, fmt.Errorf("compliance: touched receipts: %w", err)
	}
	for _, r := range rows {
		page, err := receipts.List(ctx, idb, spaceID, r.Seq-1, 1)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
	}
	return out, nil
}

// FailExport marks a running export failed with a short reason code.
func (s *Service) FailExport(ctx context.Context, spaceID, id, reason string) error {
	return s.failExport(ctx, spaceID, id, StatusRunning, reason)
}

// failExportIfRunning is FailExport that reports whether it moved the row (false: the export
// was no longer running).
func (s *Service) failExportIfRunning(ctx context.Context, spaceID, id, reason string) (bool, error) {
	res, err := s.DB.NewUpdate().Model((*models.ExportPackage)(nil)).Set("status = ?", StatusFailed).
		Set("failure = ?", reason).Set("package = NULL").Where("id = ? AND space_id = ? AND status = ?", id, spaceID, StatusRunning).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("compliance: fail export: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("compliance: fail export: %w", err)
	}
	return n == 1, nil
}

// failExport marks export id failed with reason if it is still in status from; it drops the
// package bytes (they can no longer be opened, or were never finished).
func (s *Service) failExport(ctx context.Context, spaceID, id, from, reason string) error {
	_, err := s.DB.NewUpdate().Model((*models.ExportPackage)(nil)).Set("status = ?", StatusFailed).
		Set("failure = ?", reason).Set("package = NULL").Where("id = ? AND space_id = ? AND status = ?", id, spaceID, from).Exec(ctx)
	if err != nil {
		return fmt.Errorf("compliance: fail export: %w", err)
	}
	return nil
}
