package spaces

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/models"
)

// OperatorPrefix starts every operator key: "amop_" and 43 characters of base64url (32
// random bytes). The prefix differs from a space key's ("am_"), so an operator key is never
// accepted where a space key is (it fails the space key's format check: 401 invalid_key) and
// the two cannot be confused in a log scrubber or a secret scanner.
const OperatorPrefix = "amop_"

// Operator is an authenticated operator key: its id and label, never its secret.
type Operator struct {
	KeyID string
	Label string
}

// maxOperatorLabel is the longest label an operator key may carry.
const maxOperatorLabel = 120

// MintOperatorKey mints an operator key labelled label (`agentmemory operator-key create`,
// run next to the database): it returns its id and the key, shown once. An operator key may
// only create spaces (POST /v1/spaces); it reads and writes no space. A blank label or one
// over 120 characters is fault.Invalid (member label).
func MintOperatorKey(ctx context.Context, db bun.IDB, label string, now time.Time) (keyID, key string, err error) {
	label = strings.TrimSpace(label)
	if label == "" || len(label) > maxOperatorLabel {
		return "", "", fault.New(fault.Invalid, "invalid_member", "an operator key's label is 1-120 characters").With("member", "label")
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("spaces: operator key: %w", err)
	}
	key = OperatorPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	row := &models.OperatorKey{ID: auth.NewID("opk"), Hash: auth.HashKey(key), Label: label, CreatedAt: now.UTC()}
	if _, err := db.NewInsert().Model(row).Exec(ctx); err != nil {
		return "", "", fmt.Errorf("spaces: insert operator key: %w", err)
	}
	return row.ID, key, nil
}

// RevokeOperatorKey revokes the operator key keyID, effective on its next request. An unknown
// or already revoked id is fault.NotFound "key_not_found".
func RevokeOperatorKey(ctx context.Context, db bun.IDB, keyID string, now time.Time) error {
	res, err := db.NewUpdate().Model((*models.OperatorKey)(nil)).Set("revoked_at = ?", now.UTC()).
		Where("id = ? AND revoked_at IS NULL", keyID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("spaces: revoke operator key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fault.New(fault.NotFound, "key_not_found", "no active operator key with that id")
	}
	return nil
}

// AuthenticateOperator checks an operator key. A well-formed space key (am_...) is
// fault.Forbidden "operator_key_required": a space's keys, its admin's included, never create
// spaces, so no tenant reaches another tenant's space this way; anything else unknown,
// malformed or revoked is auth.InvalidKey (401).
func AuthenticateOperator(ctx context.Context, db bun.IDB, key string) (Operator, error) {
	if !strings.HasPrefix(key, OperatorPrefix) || len(key) != len(OperatorPrefix)+43 {
		if _, err := auth.CheckKeyFormat(key); err == nil {
			return Operator{}, fault.New(fault.Forbidden, "operator_key_required",
				"spaces are created with an operator key (agentmemory operator-key create), never with a space's key")
		}
		return Operator{}, auth.InvalidKey()
	}
	hash := auth.HashKey(key)
	var row models.OperatorKey
	err := db.NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Operator{}, auth.InvalidKey()
	}
	if err != nil {
		return Operator{}, fmt.Errorf("spaces: load operator key: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(row.Hash), []byte(hash)) != 1 || row.RevokedAt != nil {
		return Operator{}, auth.InvalidKey()
	}
	return Operator{KeyID: row.ID, Label: row.Label}, nil
}
