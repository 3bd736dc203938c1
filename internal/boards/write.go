package boards

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/boardrules"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/quotas"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/strictjson"
	"github.com/agentmemory/agentmemory/models"
)

// Reasons a write was not stored (as working memory's, WM-8: 200, stored false).
const (
	ReasonNotDeclared = "not_declared_field"
	ReasonOverCap     = "over_cap"
)

// WriteRequest is the body of PUT /v1/boards: the board (Type and ID, in the body: ids never
// travel in paths), IfVersion (required: the version the writer read, 0 for a board it never
// read), Body (the fields written; the others keep their stored values) and Lease (the
// writer's lease, when it holds one).
type WriteRequest struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	IfVersion *int64          `json:"if_version"`
	Body      json.RawMessage `json:"body"`
	Lease     *LeaseProof     `json:"lease,omitempty"`
}

// WriteResult is the answer of a write: Stored and the board's Version after it; Settled
// names, for every field both this write and another since IfVersion changed, the rule that
// settled it (empty when the write was at the stored version, or nothing collided); Reason,
// Fields, Bytes and MaxBytes as working memory's (not_declared_field, over_cap).
type WriteResult struct {
	Stored   bool                 `json:"stored"`
	Version  int64                `json:"version"`
	Settled  []boardrules.Outcome `json:"settled"`
	Reason   *string              `json:"reason"`
	Fields   []string             `json:"fields,omitempty"`
	Bytes    int                  `json:"bytes,omitempty"`
	MaxBytes int                  `json:"max_bytes,omitempty"`
}

// maxWriters is how many of a board's latest writers it lists (Meta).
const maxWriters = 16

// Write applies a write of p to a board (issue 31). Checks in order: the request (fault.Invalid
// naming the member), the grant (read_write: fault.Forbidden CodeGrantRequired), declared
// fields (stored:false not_declared_field), values (fault.Invalid invalid_field_value), the
// lease (409 lease_lost / lease_held, leases.go), then the version: at the stored version the
// fields apply; at an older one kept in history, boardrules.Merge settles them (a rejection is
// fault.Stale CodeConflict with the current version and the outcomes, nothing changes); at a
// version whose base is gone, or that the board never had, fault.Stale CodeConflict with
// reason base_gone. Then the cap (stored:false over_cap). A stored write commits whole with
// its board_versions row, its subjects, its receipt (naming the rule of each settled field)
// and its TypeUpdated event; a refused conflict leaves only its receipt. A write creating a
// board past the space's boards_per_space is 409 quota_exceeded and stores nothing.
func (s *Service) Write(ctx context.Context, p auth.Principal, req WriteRequest) (WriteResult, error) {
	ours, err := parseWrite(req)
	if err != nil {
		return WriteResult{}, err
	}
	t, err := s.resolve(ctx, p, req.Type, req.ID, spaces.AccessReadWrite)
	if err != nil {
		return WriteResult{}, err
	}
	if undeclared := undeclaredFields(t.schema, ours); len(undeclared) > 0 {
		reason := ReasonNotDeclared
		return WriteResult{Version: *req.IfVersion, Settled: []boardrules.Outcome{}, Reason: &reason, Fields: undeclared}, nil
	}
	if err := checkSubjects(t, ours); err != nil {
		return WriteResult{}, err
	}
	if ours, err = s.prepareFields(ctx, t, ours); err != nil {
		return WriteResult{}, err
	}
	rules, err := t.schema.ConflictRules()
	if err != nil {
		return WriteResult{}, err
	}
	var res WriteResult
	var refused error
	err = s.runTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		res, refused, err = s.writeTx(ctx, tx, t, req, rules, ours)
		return err
	})
	if err != nil {
		// A new board past features.quotas.boards_per_space: 409 quota_exceeded, nothing stored.
		return WriteResult{}, wrap("write", quotas.Refusal(ctx, s.DB, t.spaceID, err))
	}
	if refused != nil {
		return WriteResult{}, refused
	}
	return res, nil
}

// parseWrite checks a write's members and returns its fields.
func parseWrite(req WriteRequest) (strictjson.Object, error) {
	if req.IfVersion == nil {
		return nil, invalid("if_version", "if_version is required: the version you read (0 for a board you never read)")
	}
	if *req.IfVersion < 0 {
		return nil, invalid("if_version", "if_version must be 0 or more")
	}
	trimmed := bytes.TrimSpace(req.Body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, invalid("body", "body is required and must be a JSON object")
	}
	body, err := strictjson.ParseObject(req.Body)
	if err != nil {
		return nil, invalid("body", "body must be a JSON object")
	}
	if len(body) == 0 {
		return nil, invalid("body", "body must set at least one field")
	}
	return body, nil
}

// undeclaredFields lists the fields of body the type does not declare, sorted.
func undeclaredFields(schema spaces.ObjectType, body strictjson.Object) []string {
	var out []string
	for name := range body {
		if _, ok := schema.Fields[name]; !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// prepareFields checks each written value against its field's type and masks pii fields, as
// working memory does; values come back canonical.
func (s *Service) prepareFields(ctx context.Context, t target, body strictjson.Object) (strictjson.Object, error) {
	out := make(strictjson.Object, len(body))
	for name, raw := range body {
		f := t.schema.Fields[name]
		if err := checkField(name, f, raw); err != nil {
			return nil, err
		}
		if f.PII && s.Masker != nil {
			masked, err := s.Masker.MaskValue(ctx, t.spaceID, raw)
			if err != nil {
				return nil, err
			}
			raw = masked
		}
		out[name] = strictjson.CanonicalValue(raw)
	}
	return out, nil
}

// settled is one write's decision: the next body, or a refusal (a rule rejected it, its base
// is gone), with the outcomes.
type settled struct {
	next     strictjson.Object
	outcomes []boardrules.Outcome
	refusal  error
}

// writeTx is one write inside tx: the space's receipt head is locked first (the space's
// board writers queue on it on PostgreSQL; SQLite's writers are serialised by its immediate
// transactions), then the board is read, the lease checked, the fields settled and the result
// stored and recorded. refused is a refusal whose receipt commits (err nil).
func (s *Service) writeTx(ctx context.Context, tx bun.Tx, t target, req WriteRequest, rules map[string]boardrules.Rule, ours strictjson.Object) (WriteResult, error, error) {
	now := s.Now().UTC()
	head, err := receipts.LockHead(ctx, tx, t.spaceID)
	if err != nil {
		return WriteResult{}, nil, err
	}
	row, err := s.loadBoard(ctx, tx, t, true)
	if err != nil {
		return WriteResult{}, nil, err
	}
	if err := s.checkLease(ctx, tx, t, req.Lease, now); err != nil {
		return WriteResult{}, err, nil
	}
	st, err := s.settle(ctx, tx, t, row, *req.IfVersion, rules, ours, now)
	if err != nil {
		return WriteResult{}, nil, err
	}
	if st.refusal != nil {
		_, err := receipts.AppendGroup(ctx, tx, head, []receipts.Entry{refusedEntry(t, row, *req.IfVersion, st.outcomes)}, []time.Time{now})
		return WriteResult{}, st.refusal, err
	}
	canon := st.next.Join()
	if max := t.schema.BoardMaxBytes(); len(canon) > max {
		reason := ReasonOverCap
		return WriteResult{Version: versionOf(row), Settled: st.outcomes, Reason: &reason, Bytes: len(canon), MaxBytes: max}, nil, nil
	}
	stored, err := s.store(ctx, tx, t, row, st.next, ours, canon, now)
	if err != nil {
		return WriteResult{}, nil, err
	}
	if _, err := receipts.AppendGroup(ctx, tx, head, []receipts.Entry{writeEntry(t, stored, *req.IfVersion, st.outcomes)}, []time.Time{now}); err != nil {
		return WriteResult{}, nil, err
	}
	ev := events.Event{Type: TypeUpdated, SpaceID: t.spaceID, BoardID: stored.ID, Kind: t.typ, SourceID: t.agent, Version: stored.Version}
	if _, err := events.Enqueue(ctx, tx, ev, now); err != nil {
		return WriteResult{}, nil, err
	}
	return WriteResult{Stored: true, Version: stored.Version, Settled: st.outcomes}, nil, nil
}

func versionOf(row *models.Board) int64 {
	if row == nil {
		return 0
	}
	return row.Version
}

// settle decides the next body of a write made at ifVersion on the stored row (nil: no board
// yet): applied as is at the stored version; merged on the base from history at an older one;
// refused when the base is gone or the version is ahead of the board.
func (s *Service) settle(ctx context.Context, tx bun.IDB, t target, row *models.Board, ifVersion int64, rules map[string]boardrules.Rule, ours strictjson.Object, now time.Time) (settled, error) {
	current := versionOf(row)
	theirs := liveFields(row, t.schema, now)
	if ifVersion == current {
		next := make(strictjson.Object, len(theirs)+len(ours))
		for k, v := range theirs {
			next[k] = v
		}
		for k, v := range ours {
			next[k] = v
		}
		return settled{next: next, outcomes: []boardrules.Outcome{}}, nil
	}
	base, ok, err := s.baseAt(ctx, tx, row, ifVersion)
	if err != nil {
		return settled{}, err
	}
	if !ok || ifVersion > current {
		return settled{outcomes: []boardrules.Outcome{}, refusal: conflict(current, "base_gone", nil)}, nil
	}
	next, outcomes, err := boardrules.Merge(rules, base, theirs, ours)
	var c *boardrules.Conflict
	if errors.As(err, &c) {
		return settled{outcomes: c.Outcomes, refusal: conflict(current, "rule_rejected", c.Outcomes)}, nil
	}
	if err != nil {
		return settled{}, err
	}
	return settled{next: next, outcomes: outcomes}, nil
}

// conflict is the 412 of a refused write: the current version, why (rule_rejected or
// base_gone) and the outcomes of the fields both sides changed.
func conflict(current int64, reason string, outcomes []boardrules.Outcome) error {
	if outcomes == nil {
		outcomes = []boardrules.Outcome{}
	}
	msg := "another write changed the fields you wrote since your version and a field's rule rejected this write; read the board and retry"
	if reason == "base_gone" {
		msg = "the version you read is no longer kept (or never existed); read the board and retry"
	}
	e := fault.New(fault.Stale, CodeConflict, "%s", msg)
	e.Extra = map[string]any{"version": current, "reason": reason, "settled": outcomes}
	return e
}

// baseAt returns the body of row's version v from its history (v 0: the empty board before
// its first write); ok is false when that version is no longer kept, or no longer opens (a
// customer it named was erased).
func (s *Service) baseAt(ctx context.Context, idb bun.IDB, row *models.Board, v int64) (strictjson.Object, bool, error) {
	if v == 0 {
		return strictjson.Object{}, true, nil
	}
	if row == nil {
		return nil, false, nil
	}
	var bv models.BoardVersion
	err := idb.NewSelect().Model(&bv).Where("board_id = ? AND version = ?", row.ID, v).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if ok, err := s.openVersion(ctx, &bv); err != nil || !ok {
		return nil, false, err
	}
	body, err := strictjson.ParseObject([]byte(bv.Body))
	if err != nil {
		return nil, false, fault.New(fault.Invalid, "corrupt_record", "a stored board version does not decode")
	}
	return body, true, nil
}

// loadBoard returns t's stored board, its body unsealed (nil when none), FOR UPDATE on
// PostgreSQL with lock. A board whose body no longer opens (its key was destroyed after this
// copy of the row was taken: a restored backup not yet through `agentmemory restore`) is
// never written: nil, and a write (lock) deletes it first, with its history and links.
func (s *Service) loadBoard(ctx context.Context, idb bun.IDB, t target, lock bool) (*models.Board, error) {
	var row models.Board
	q := idb.NewSelect().Model(&row).Where("space_id = ? AND type = ? AND board_hash = ?", t.spaceID, t.typ, t.hash)
	if lock && !isSQLite(idb) {
		q = q.For("UPDATE")
	}
	err := q.Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ok, err := s.openBoard(ctx, &row)
	if err != nil {
		return nil, err
	}
	if !ok {
		if lock {
			_, err = dropRows(ctx, idb, []string{row.ID})
		}
		return nil, err
	}
	return &row, nil
}

func isSQLite(idb bun.IDB) bool {
	return idb.Dialect().Name() == dialect.SQLite
}
