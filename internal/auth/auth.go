// Package auth mints, stores and checks API keys. A key is "am_" followed by 43 characters of
// base64url (32 random bytes); only its SHA-256 is stored, and it is shown once. The space,
// agent, vendor, scopes and roles of a request come from its key alone (MS-1).
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	amdb "github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/models"
)

// Key kinds.
const (
	KindAgent  = "agent"
	KindPerson = "person"
)

// Agent scopes (DESIGN.md, Concepts).
const (
	ScopeAgentState       = "agent_state"
	ScopeAgentMemory      = "agent_memory"
	ScopeAgentMemoryWrite = "agent_memory:write"
	ScopeContext          = "context"
	// ScopeKnowledgeRead retrieves from knowledge bases; ScopeKnowledgeWrite ingests and
	// deletes documents (KN-1: separate permissions, reading does not imply writing).
	ScopeKnowledgeRead  = "knowledge:read"
	ScopeKnowledgeWrite = "knowledge:write"
	// ScopeExport reads the space's continuous export feed (issue 33, EXP-1): every exported
	// table, as role admin does; for the key of an export pipeline, which needs no person key.
	ScopeExport = "export"
)

// Person roles.
const (
	RoleIntegration = "integration"
	RoleAdmin       = "admin"
	RoleSecurity    = "security"
	RoleReviewer    = "reviewer"
	RoleCompliance  = "compliance"
)

// AllScopes and AllRoles list the valid values, in a stable order.
var (
	AllScopes = []string{ScopeAgentState, ScopeAgentMemory, ScopeAgentMemoryWrite, ScopeContext, ScopeKnowledgeRead, ScopeKnowledgeWrite, ScopeExport}
	AllRoles  = []string{RoleAdmin, RoleSecurity, RoleIntegration, RoleReviewer, RoleCompliance}
)

// Prefix starts every key.
const Prefix = "am_"

// Principal is who a request acts as, derived from its key.
type Principal struct {
	SpaceID string
	KeyID   string
	Kind    string // KindAgent or KindPerson
	Agent   string // agent keys
	Vendor  string // agent keys
	Name    string // person keys
	Scopes  []string
	Roles   []string
	// AgentVersion is the request's Agent-Version header (MS-5 provenance: which version of
	// the agent wrote an entry), already checked to be a short version token; "" when none
	// was sent. It is recorded on what the request writes, never used to authorize.
	AgentVersion string
}

// HasScope reports whether an agent key carries scope.
func (p Principal) HasScope(scope string) bool { return slices.Contains(p.Scopes, scope) }

// HasRole reports whether a person key carries role.
func (p Principal) HasRole(role string) bool { return slices.Contains(p.Roles, role) }

// HasAnyRole reports whether a person key carries one of roles.
func (p Principal) HasAnyRole(roles ...string) bool {
	return slices.ContainsFunc(roles, p.HasRole)
}

// IsAgent reports whether the key is an agent's.
func (p Principal) IsAgent() bool { return p.Kind == KindAgent }

// RequireRole returns a fault.Forbidden "role_required" unless p holds one of roles.
func (p Principal) RequireRole(roles ...string) error {
	if p.HasAnyRole(roles...) {
		return nil
	}
	return fault.New(fault.Forbidden, "role_required", "this call needs role %s", strings.Join(roles, " or "))
}

// NewKey returns a fresh random key and its stored hash.
func NewKey() (key, hash string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	key = Prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return key, HashKey(key)
}

// HashKey returns the stored form of a key: hex SHA-256. Keys carry 256 bits of entropy, so a
// fast hash is safe.
func HashKey(key string) string {
	s := sha256.Sum256([]byte(key))
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], s[:])
	return string(out[:])
}

// NewID returns a new time-ordered id with a readable prefix, e.g. "key_0193...".
func NewID(prefix string) string {
	return prefix + "_" + strings.ReplaceAll(uuid.Must(uuid.NewV7()).String(), "-", "")
}

// KeySpec describes a key to mint. For an agent key: Agent, Vendor, Scopes; for a person key:
// Name, Roles.
type KeySpec struct {
	Kind   string   `json:"kind"`
	Agent  string   `json:"agent,omitempty"`
	Vendor string   `json:"vendor,omitempty"`
	Name   string   `json:"name,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
	Roles  []string `json:"roles,omitempty"`
	// Purposes (agent keys, QT-2): what the agent is for, at most MaxPurposes distinct
	// lower-case words (purposePattern), shown with the key and receipted at mint.
	Purposes []string `json:"purposes,omitempty"`
}

// MaxPurposes is the most purposes an agent key may carry.
const MaxPurposes = 8

// purposePattern is one purpose: a lower-case word of up to 40 letters, digits, _ and -.
var purposePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`)

// Validate checks a KeySpec; errors are fault.Invalid naming the member.
func (s KeySpec) Validate() error {
	switch s.Kind {
	case KindAgent:
		if !namePattern.MatchString(s.Agent) {
			return fault.New(fault.Invalid, "invalid_member", "agent must be 1-64 characters of letters, digits, _ . : -").With("member", "agent")
		}
		if !namePattern.MatchString(s.Vendor) {
			return fault.New(fault.Invalid, "invalid_member", "vendor must be 1-64 characters of letters, digits, _ . : -").With("member", "vendor")
		}
		if len(s.Roles) > 0 || s.Name != "" {
			return fault.New(fault.Invalid, "invalid_member", "an agent key takes agent, vendor and scopes, not name or roles").With("member", "roles")
		}
		for _, sc := range s.Scopes {
			if !slices.Contains(AllScopes, sc) {
				return fault.New(fault.Invalid, "invalid_member", "unknown scope %q (known: %s)", sc, strings.Join(AllScopes, ", ")).With("member", "scopes")
			}
		}
		if err := validatePurposes(s.Purposes); err != nil {
			return err
		}
	case KindPerson:
		if err := ValidatePersonName(s.Name); err != nil {
			return err
		}
		if s.Agent != "" || s.Vendor != "" || len(s.Scopes) > 0 {
			return fault.New(fault.Invalid, "invalid_member", "a person key takes name and roles, not agent, vendor or scopes").With("member", "scopes")
		}
		if len(s.Purposes) > 0 {
			return fault.New(fault.Invalid, "invalid_member", "purposes belong to agent keys").With("member", "purposes")
		}
		if len(s.Roles) == 0 {
			return fault.New(fault.Invalid, "invalid_member", "a person key needs at least one role").With("member", "roles")
		}
		for _, r := range s.Roles {
			if !slices.Contains(AllRoles, r) {
				return fault.New(fault.Invalid, "invalid_member", "unknown role %q (known: %s)", r, strings.Join(AllRoles, ", ")).With("member", "roles")
			}
		}
	default:
		return fault.New(fault.Invalid, "invalid_member", `kind must be "agent" or "person"`).With("member", "kind")
	}
	return nil
}

// validatePurposes checks an agent key's purposes: at most MaxPurposes, each a lower-case
// word (purposePattern), no repeats (fault.Invalid naming "purposes").
func validatePurposes(purposes []string) error {
	if len(purposes) > MaxPurposes {
		return fault.New(fault.Invalid, "invalid_member", "at most %d purposes", MaxPurposes).With("member", "purposes")
	}
	for i, pu := range purposes {
		if !purposePattern.MatchString(pu) {
			return fault.New(fault.Invalid, "invalid_member", "a purpose is a lower-case word of up to 40 letters, digits, _ and -").With("member", "purposes")
		}
		if slices.Contains(purposes[:i], pu) {
			return fault.New(fault.Invalid, "invalid_member", "purpose %q is repeated", pu).With("member", "purposes")
		}
	}
	return nil
}

// Mint stores a new key of spec in space, created by createdBy (a key id, or "cli"), and
// returns its id and the key itself, which is never retrievable again. An agent name already
// minted for another vendor in the space is fault.Conflict "agent_vendor_mismatch".
func Mint(ctx context.Context, db bun.IDB, spaceID, createdBy string, spec KeySpec, now time.Time) (keyID, key string, err error) {
	if err := spec.Validate(); err != nil {
		return "", "", err
	}
	if spec.Kind == KindAgent {
		// An agent name is one agent of one vendor in a space: its working state and notes
		// are found by that name, so a second vendor must not take it over.
		taken, err := db.NewSelect().Model((*models.APIKey)(nil)).
			Where("space_id = ? AND kind = ? AND agent = ? AND vendor <> ?", spaceID, KindAgent, spec.Agent, spec.Vendor).
			Exists(ctx)
		if err != nil {
			return "", "", fmt.Errorf("auth: check agent: %w", err)
		}
		if taken {
			return "", "", fault.New(fault.Conflict, "agent_vendor_mismatch", "this agent name belongs to another vendor in this space").With("member", "vendor")
		}
	}
	key, hash := NewKey()
	row := &models.APIKey{
		ID: NewID("key"), SpaceID: spaceID, Hash: hash, Kind: spec.Kind,
		Agent: spec.Agent, Vendor: spec.Vendor, Name: spec.Name,
		Scopes: nonNil(spec.Scopes), Roles: nonNil(spec.Roles), Purposes: nonNil(spec.Purposes),
		CreatedBy: createdBy, CreatedAt: now.UTC(),
	}
	if _, err := db.NewInsert().Model(row).Exec(ctx); err != nil {
		return "", "", fmt.Errorf("auth: insert key: %w", err)
	}
	return row.ID, key, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// Authenticate resolves a presented key to its Principal. An unknown, malformed or revoked key
// is fault.Unauthorized "invalid_key"; the key itself never appears in the error.
func Authenticate(ctx context.Context, db bun.IDB, key string) (Principal, error) {
	if !strings.HasPrefix(key, Prefix) || len(key) != len(Prefix)+43 {
		return Principal{}, errInvalidKey
	}
	hash := HashKey(key)
	var row models.APIKey
	var err error
	if d, ok := db.(*bun.DB); ok {
		// Every request runs this: a statement prepared once per pool.
		err = amdb.QueryOne(ctx, d, keyByHash, []any{&row}, hash)
	} else {
		err = db.NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, errInvalidKey
	}
	if err != nil {
		return Principal{}, fmt.Errorf("auth: load key: %w", err)
	}
	return FromRow(row, hash)
}

// CheckKeyFormat returns the stored hash of key, or fault.Unauthorized "invalid_key" when key
// cannot be a key (Authenticate's first step, for lookups that read the key row themselves).
func CheckKeyFormat(key string) (string, error) {
	if !strings.HasPrefix(key, Prefix) || len(key) != len(Prefix)+43 {
		return "", errInvalidKey
	}
	return HashKey(key), nil
}

// InvalidKey is the error of an unknown, malformed or revoked key (fault.Unauthorized
// "invalid_key").
func InvalidKey() error { return errInvalidKey }

// FromRow is the Principal of key row found by hash; a revoked row (or one whose hash
// differs) is fault.Unauthorized "invalid_key".
func FromRow(row models.APIKey, hash string) (Principal, error) {
	if subtle.ConstantTimeCompare([]byte(row.Hash), []byte(hash)) != 1 || row.RevokedAt != nil {
		return Principal{}, errInvalidKey
	}
	return Principal{
		SpaceID: row.SpaceID, KeyID: row.ID, Kind: row.Kind, Agent: row.Agent,
		Vendor: row.Vendor, Name: row.Name, Scopes: row.Scopes, Roles: row.Roles,
	}, nil
}

// keyByHash is Authenticate's statement: every column of models.APIKey.
const keyByHash = `SELECT id, space_id, hash, kind, agent, vendor, name, scopes, roles, created_by, created_at, revoked_at FROM api_keys WHERE hash = ?`

var errInvalidKey = fault.New(fault.Unauthorized, "invalid_key", "the key is unknown or revoked")

// Revoke marks key keyID of spaceID revoked; it takes effect on the next request. An unknown
// key (or one of another space) is fault.NotFound "key_not_found".
func Revoke(ctx context.Context, db bun.IDB, spaceID, keyID string, now time.Time) error {
	res, err := db.NewUpdate().Model((*models.APIKey)(nil)).
		Set("revoked_at = ?", now.UTC()).
		Where("id = ? AND space_id = ? AND revoked_at IS NULL", keyID, spaceID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("auth: revoke: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fault.New(fault.NotFound, "key_not_found", "no active key with that id in this space")
	}
	return nil
}

// KeyInfo is a key as a listing shows it: never its secret or its hash.
type KeyInfo struct {
	ID        string     `json:"key_id"`
	Kind      string     `json:"kind"`
	Agent     string     `json:"agent,omitempty"`
	Vendor    string     `json:"vendor,omitempty"`
	Name      string     `json:"name,omitempty"`
	Scopes    []string   `json:"scopes"`
	Roles     []string   `json:"roles"`
	Purposes  []string   `json:"purposes"`
	CreatedBy string     `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	// LastUsedAt is when the key last authenticated an API request, refreshed at most once a minute (Usage);
	// nil: never, as far as recorded.
	LastUsedAt *time.Time `json:"last_used_at"`
}

// List returns the keys of spaceID, oldest first, revoked ones too.
func List(ctx context.Context, db bun.IDB, spaceID string) ([]KeyInfo, error) {
	var rows []models.APIKey
	if err := db.NewSelect().Model(&rows).ExcludeColumn("hash").Where("space_id = ?", spaceID).
		Order("created_at ASC", "id ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("auth: list keys: %w", err)
	}
	return keyInfos(rows), nil
}

// Info returns key keyID of spaceID as List shows it. An unknown key is fault.NotFound
// "key_not_found".
func Info(ctx context.Context, db bun.IDB, spaceID, keyID string) (KeyInfo, error) {
	var row models.APIKey
	err := db.NewSelect().Model(&row).ExcludeColumn("hash").Where("id = ? AND space_id = ?", keyID, spaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return KeyInfo{}, fault.New(fault.NotFound, "key_not_found", "no such key")
	}
	if err != nil {
		return KeyInfo{}, fmt.Errorf("auth: load key: %w", err)
	}
	return keyInfos([]models.APIKey{row})[0], nil
}

// ByID resolves key keyID of spaceID to its Principal, as Authenticate does for the key
// itself (the Console's sessions hold the key's id, never the key). An unknown or revoked key
// is fault.Unauthorized "invalid_key".
func ByID(ctx context.Context, db bun.IDB, spaceID, keyID string) (Principal, error) {
	var row models.APIKey
	err := db.NewSelect().Model(&row).Where("id = ? AND space_id = ?", keyID, spaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, errInvalidKey
	}
	if err != nil {
		return Principal{}, fmt.Errorf("auth: load key: %w", err)
	}
	if row.RevokedAt != nil {
		return Principal{}, errInvalidKey
	}
	return Principal{
		SpaceID: row.SpaceID, KeyID: row.ID, Kind: row.Kind, Agent: row.Agent,
		Vendor: row.Vendor, Name: row.Name, Scopes: row.Scopes, Roles: row.Roles,
	}, nil
}
