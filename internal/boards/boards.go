// Package boards is shared memory (issue 31): boards of a type declared in object-types with
// ownership shared, read and written by agents only by grant (the board-grants document),
// each write conditional on the version its writer read. A write at an older version is a
// three-way merge of that version (base, kept in a bounded history), the stored board
// (theirs) and the write (ours), settled field by field by the rule the space wrote
// (internal/boardrules); the answer and the receipt name the rule that settled each field.
// Board ids are stored only as keyed hashes (as scope ids, WM-3); operators see sizes,
// versions, writers and dates, never content (Meta).
package boards

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/changes"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
)

// Error codes of the board routes.
const (
	// CodeConflict (412): the write's rules rejected it, or its base version is gone.
	CodeConflict = "board_conflict"
	// CodeGrantRequired (403): no grant lets this agent read (or write) this board.
	CodeGrantRequired = "board_grant_required"
	// CodeTypeNotFound (404): object-types declares no board type of that name.
	CodeTypeNotFound = "board_type_not_found"
)

// Event and receipt actions.
const (
	// TypeUpdated is the outbox event of every stored board write: ids only (BoardID, the
	// type as Kind, the writer as SourceID, the new Version).
	TypeUpdated   = "board.updated"
	ActionRead    = "board.read"
	ActionWrite   = "board.write"
	ActionRefused = "board.conflict"
)

// Masker masks personal data inside a pii field's value by the space's masking rules
// (state.Service.MaskValue: working memory's masking).
type Masker interface {
	MaskValue(ctx context.Context, spaceID string, raw json.RawMessage) (json.RawMessage, error)
}

// Service reads and writes boards and their grants.
type Service struct {
	DB       *bun.DB
	Docs     spaces.Documents
	Changes  *changes.Service
	Hasher   keyed.Hasher
	Masker   Masker
	Receipts *receipts.Log
	Now      func() time.Time
	// Keys seals boards' bodies (sealing.go); nil stores them in clear.
	Keys keystore.Store
}

// runTx runs fn in a transaction. Board writers of one SQLite file queue on its write gate
// and PostgreSQL's on the space's receipt head; a statement new to the pool is prepared on the
// transaction's own connection (internal/db), so a swarm of writers cannot fill the pool while
// the one holding the gate waits for another connection.
func (s *Service) runTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.DB.RunInTx(ctx, nil, fn)
}

// idPattern is a board id: 1-256 characters of letters, digits and _ . : @ - (no '/', which
// grant patterns cannot match across).
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,255}$`)

// target is a resolved request: which board, of which type, read or written by whom.
type target struct {
	spaceID string
	typ     string
	hash    string
	schema  spaces.ObjectType
	agent   string
	keyID   string
	region  string // the space's masking region, to read subject handles
}

// resolve checks that p, an agent key, holds a grant giving access (spaces.AccessRead or
// AccessReadWrite) to board id of typ, and returns the target. Errors: fault.Invalid (a
// malformed type or id, naming the member), fault.Forbidden "role_required" (a person key:
// boards are read and written by agents' code) or CodeGrantRequired, fault.NotFound
// CodeTypeNotFound.
func (s *Service) resolve(ctx context.Context, p auth.Principal, typ, id, access string) (target, error) {
	if typ == "" {
		return target{}, invalid("type", "type is required: a board type of object-types (ownership shared)")
	}
	if !idPattern.MatchString(id) {
		return target{}, invalid("id", "id is 1-256 characters of letters, digits and _ . : @ - starting with a letter or digit")
	}
	if !p.IsAgent() {
		return target{}, fault.New(fault.Forbidden, "role_required", "boards are read and written with agent keys; people see their metadata (GET /v1/boards)")
	}
	features, types, err := s.Docs.Both(ctx, p.SpaceID)
	if err != nil {
		return target{}, err
	}
	schema, ok := types.BoardType(typ)
	if !ok {
		return target{}, fault.New(fault.NotFound, CodeTypeNotFound, "object-types declares no board type %q (ownership shared)", typ).With("member", "type")
	}
	grants, err := s.Docs.BoardGrants(ctx, p.SpaceID)
	if err != nil {
		return target{}, err
	}
	if !granted(grants, typ, id, p, access) {
		what := "read"
		if access == spaces.AccessReadWrite {
			what = "write"
		}
		return target{}, fault.New(fault.Forbidden, CodeGrantRequired, "no grant lets this agent %s this board (POST /v1/boards/%s/grants)", what, typ)
	}
	return target{spaceID: p.SpaceID, typ: typ, hash: s.Hasher.Hash(p.SpaceID, "board:"+typ, id), schema: schema, agent: p.Agent, keyID: p.KeyID, region: features.Region()}, nil
}

// granted reports whether a grant of g lets p have access to board id of typ.
func granted(g spaces.BoardGrants, typ, id string, p auth.Principal, access string) bool {
	for _, gr := range g.Grants {
		if gr.Allows(typ, id, p.Agent, p.Vendor, access) {
			return true
		}
	}
	return false
}

func invalid(member, msg string) error {
	return fault.New(fault.Invalid, "invalid_member", "%s", msg).With("member", member)
}

// checkField is working memory's value check of a board field.
func checkField(name string, f spaces.Field, raw json.RawMessage) error {
	return state.CheckFieldValue(name, f, raw)
}

// wrap adds the package's prefix to a store error.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	if fault.As(err) != nil {
		return err
	}
	return fmt.Errorf("boards: %s: %w", what, err)
}
