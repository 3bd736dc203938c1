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
	"github.com/agentmemory/agentmemory/internal/erasure"
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

// Package is a subject's data package (GOV-3, WM-13): what every registered store holds of
// the subject (Members, by member name: "profiles", "states", "identity_links", "turns"),
// and the receipts that touched it. It encodes as one JSON object holding the members beside
// the fixed ones.
type Package struct {
	ExportID    string             `json:"export_id"`
	SpaceID     string             `json:"space_id"`
	GeneratedAt time.Time          `json:"generated_at"`
	ExpiresAt   time.Time          `json:"expires_at"`
	Members     map[string]any     `json:"-"`
	Receipts    []receipts.Receipt `json:"receipts"`
	NotCovered  []string           `json:"not_covered"`
}

// MarshalJSON encodes p's fixed members and its stores' members as one object.
func (p Package) MarshalJSON() ([]byte, error) {
	m := map[string]any{
		"export_id": p.ExportID, "space_id": p.SpaceID, "generated_at": p.GeneratedAt, "expires_at": p.ExpiresAt,
		"receipts": p.Receipts, "not_covered": p.NotCovered,
	}
	for k, v := range p.Members {
		if _, fixed := m[k]; !fixed {
			m[k] = v
		}
	}
	return json.Marshal(m)
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

// subjectScope is the one subject-scope resolution (issue 29 §4) of erasure, its preview and
// export: the profiles holding the handle hash and every handle hash of theirs (with the
// given one), sorted; never nil slices.
func subjectScope(ctx context.Context, idb bun.IDB, spaceID, hash string) (profileIDs, hashes []string, err error) {
	profileIDs, hashes = []string{}, []string{}
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

// BuildExport builds the package of a running export from every registered store's Export
// (plan: the subject's scope → gather: each store's part → receipts → seal → store), seals it
// under the subject's key (state.SubjectKeyID of the requested handle) and completes the
// export with an "export.complete" receipt holding only counts. Building a completed export
// again changes nothing. It returns the counts. Errors: "export_not_found",
// "corrupt_record", "export_erased" (the subject was erased meanwhile), the stores'.
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
	profileIDs, hashes, err := subjectScope(ctx, s.DB, spaceID, row.SubjectHash)
	if err != nil {
		return ExportCounts{}, err
	}
	t := erasure.Target{SpaceID: spaceID, Kind: erasure.Subject, HandleHashes: hashes, ProfileIDs: profileIDs}
	pkg, counts, touched, err := s.gatherExport(ctx, t)
	if err != nil {
		return ExportCounts{}, err
	}
	pkg.ExportID, pkg.SpaceID, pkg.GeneratedAt, pkg.ExpiresAt = id, spaceID, now, row.ExpiresAt.UTC()
	if _, err := receipts.Seal(ctx, s.DB, spaceID); err != nil { // every committed receipt has its seq
		return ExportCounts{}, err
	}
	if pkg.Receipts, err = touchedReceipts(ctx, s.DB, spaceID, touched); err != nil {
		return ExportCounts{}, err
	}
	counts.Receipts = len(pkg.Receipts)
	sealed, err := s.sealPackage(ctx, row, pkg, counts)
	if err != nil {
		return ExportCounts{}, err
	}
	return counts, s.storePackage(ctx, row, sealed, counts, now)
}

// gatherExport asks every registered store for its part of t's package, in registry order:
// the package's members, the counts and the ids whose receipts it carries.
func (s *Service) gatherExport(ctx context.Context, t erasure.Target) (Package, ExportCounts, []string, error) {
	pkg := Package{Members: map[string]any{}, Receipts: []receipts.Receipt{}, NotCovered: []string{}}
	sum := map[string]int{}
	touched := []string{}
	for _, e := range s.Registry().Erasers() {
		x, err := e.Export(ctx, s.DB, t)
		if err != nil {
			return Package{}, ExportCounts{}, nil, fmt.Errorf("compliance: export %s: %w", e.Name(), err)
		}
		for k, v := range x.Members {
			pkg.Members[k] = v
		}
		for k, n := range x.Counts {
			sum[k] += n
		}
		touched = append(touched, x.Touched...)
	}
	if s.Registry().Get(StoreTurns) == nil {
		pkg.NotCovered = append(pkg.NotCovered, KindIdentityLink, KindTurn)
	}
	c := ExportCounts{Profiles: sum["profiles"], States: sum["states"], Fields: sum["fields"], Turns: sum["turns"], IdentityLinks: sum["identity_links"]}
	return pkg, c, touched, nil
}

// sealPackage encodes pkg and seals it under the subject's existing key. A handle the
// service knows nothing of gets no subject key: its package holds nothing personal (empty
// lists, no receipts) and is stored as its JSON. A key destroyed meanwhile (an erasure ran)
// is never recreated: the export fails with "export_erased".
func (s *Service) sealPackage(ctx context.Context, row *models.ExportPackage, pkg Package, counts ExportCounts) ([]byte, error) {
	plain, err := json.Marshal(pkg)
	if err != nil {
		return nil, fmt.Errorf("compliance: encode package: %w", err)
	}
	empty := counts == ExportCounts{}
	key, err := s.Keys.DataKey(ctx, state.SubjectKeyID(row.SubjectHash), false)
	switch {
	case errors.Is(err, keystore.ErrNoKey) && empty:
		return plain, nil
	case errors.Is(err, keystore.ErrNoKey):
		if ferr := s.failExport(ctx, row.SpaceID, row.ID, StatusRunning, "export_erased"); ferr != nil {
			return nil, ferr
		}
		return nil, fault.New(fault.Conflict, "export_erased", "the subject was erased while the export ran")
	case err != nil:
		return nil, fmt.Errorf("compliance: data key: %w", err)
	}
	sealed, err := keystore.Seal(key, plain, []byte("export:"+row.ID))
	if err != nil {
		return nil, fmt.Errorf("compliance: seal package: %w", err)
	}
	return sealed, nil
}

// storePackage completes the running export row with its sealed package and counts, and an
// "export.complete" receipt holding only counts, in one transaction; an export erased or
// completed meanwhile is left as it is.
func (s *Service) storePackage(ctx context.Context, row *models.ExportPackage, sealed []byte, counts ExportCounts, now time.Time) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*models.ExportPackage)(nil)).Set("status = ?", StatusCompleted).
			Set("package = ?", sealed).Set("counts = ?", mustJSON(counts)).Set("completed_at = ?", now).
			Where("id = ? AND status = ?", row.ID, StatusRunning).Exec(ctx)
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
		_, err = receipts.Append(ctx, tx, row.SpaceID, receipts.Entry{
			Kind: receipts.KindCompliance, Action: "export.complete", ActorKey: row.RequestedBy,
			ObjectIDs: []string{row.ID}, Detail: detail,
		}, now)
		return err
	})
}

// touchedReceipts returns the space's receipts naming any of ids, in chain order (at most
// 10,000).
func touchedReceipts(ctx context.Context, idb bun.IDB, spaceID string, ids []string) ([]receipts.Receipt, error) {
	out := []receipts.Receipt{}
	if len(ids) == 0 {
		return out, nil
	}
	// A read names what it delivered through a manifest (issue 32): the receipts naming a
	// manifest that names one of ids touched them too.
	manifests, err := receipts.ManifestsNaming(ctx, idb, spaceID, ids)
	if err != nil {
		return nil, err
	}
	var rows []models.Receipt
	q := idb.NewSelect().Model(&rows).Column("seq").Where("space_id = ?", spaceID)
	q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		for _, id := range ids {
			q = q.WhereOr("object_ids LIKE ?", "%"+mustJSON(id)+"%")
		}
		for _, h := range manifests {
			q = q.WhereOr("detail LIKE ?", "%"+mustJSON(receipts.ManifestDetail)+":"+mustJSON(h)+"%")
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
