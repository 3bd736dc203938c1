package spaces

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// MintKey mints a key of spec in p's space, created by p, with its admin receipt
// ("key.create"), in one transaction: both commit or neither does. It returns the key's id and
// the key itself (shown once; only its hash is stored). Errors: p without role admin is
// fault.Forbidden role_required; an invalid spec is fault.Invalid naming the member; an agent
// name held by another vendor is fault.Conflict agent_vendor_mismatch (auth.Mint).
func MintKey(ctx context.Context, db bun.IDB, p auth.Principal, spec auth.KeySpec, now time.Time) (keyID, key string, err error) {
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
		return "", "", err
	}
	if err := spec.Validate(); err != nil {
		return "", "", err
	}
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		keyID, key, err = auth.Mint(ctx, tx, p.SpaceID, p.KeyID, spec, now)
		if err != nil {
			return err
		}
		if err := BumpRevision(ctx, tx, p.SpaceID, RevisionConfig); err != nil {
			return err
		}
		_, err = receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "key.create", ActorKey: p.KeyID, ObjectIDs: []string{keyID},
			Detail: keyDetail(spec),
		}, now)
		return err
	})
	if err != nil {
		return "", "", err
	}
	return keyID, key, nil
}

// RevokeKey revokes keyID of p's space with its admin receipt ("key.revoke") and a new
// configuration revision (RevisionConfig), in one transaction; the key is refused from the next
// request on, on every replica. Errors: p without role admin is
// fault.Forbidden role_required; a key of no key in p's space is fault.NotFound (auth.Revoke).
func RevokeKey(ctx context.Context, db bun.IDB, p auth.Principal, keyID string, now time.Time) error {
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
		return err
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := auth.Revoke(ctx, tx, p.SpaceID, keyID, now); err != nil {
			return err
		}
		if err := BumpRevision(ctx, tx, p.SpaceID, RevisionConfig); err != nil {
			return err
		}
		_, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "key.revoke", ActorKey: p.KeyID, ObjectIDs: []string{keyID},
		}, now)
		return err
	})
}

// keyDetail is a key.create receipt's detail: the key's kind and, for an agent key with
// purposes, its purposes (QT-2).
func keyDetail(spec auth.KeySpec) map[string]any {
	d := map[string]any{"kind": spec.Kind}
	if len(spec.Purposes) > 0 {
		d["purposes"] = spec.Purposes
	}
	return d
}
