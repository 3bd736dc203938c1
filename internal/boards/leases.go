package boards

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/leases"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// LeaseProof is the lease a board write carries (leases.Proof).
type LeaseProof = leases.Proof

// LeaseRequest is the body of POST /v1/boards/lease, /lease/renew and /lease/release: the
// board (Type, ID), the time to live in seconds (acquire and renew: 1..3600) and, to renew or
// release, the lease (LeaseID, Token).
type LeaseRequest struct {
	Type       string `json:"type"`
	ID         string `json:"id"`
	TTLSeconds int    `json:"ttl_seconds"`
	LeaseID    string `json:"lease_id"`
	Token      int64  `json:"token"`
}

// Lease actions (receipts).
const (
	ActionLease   = "board.lease"
	ActionRenew   = "board.lease_renew"
	ActionRelease = "board.lease_release"
)

// leaseOps maps the lease actions to their operations (leases.Apply).
var leaseOps = map[string]leases.Op{ActionLease: leases.OpAcquire, ActionRenew: leases.OpRenew, ActionRelease: leases.OpRelease}

// boardTarget names t's board in the leases table (its type and keyed id hash).
func boardTarget(t target) string { return "board:" + t.typ + ":" + t.hash }

// checkLease is the fencing check of a write on t's board inside tx (leases.Check).
func (s *Service) checkLease(ctx context.Context, tx bun.IDB, t target, proof *LeaseProof, now time.Time) error {
	return leases.Check(ctx, tx, t.spaceID, boardTarget(t), proof, t.schema.LeaseAdvisory(), now)
}

// Lease acquires, renews or releases (action: ActionLease, ActionRenew, ActionRelease) a
// lease on a board for p, who needs a read_write grant on it, with a board receipt naming
// the token, in one transaction. Errors: as resolve, leases.CheckTTL, 409 lease_held
// (acquire while held), 409 lease_lost (renew or release of a lease not in force).
func (s *Service) Lease(ctx context.Context, p auth.Principal, action string, req LeaseRequest) (leases.Lease, error) {
	if action != ActionRelease {
		if err := leases.CheckTTL(req.TTLSeconds); err != nil {
			return leases.Lease{}, err
		}
	}
	t, err := s.resolve(ctx, p, req.Type, req.ID, spaces.AccessReadWrite)
	if err != nil {
		return leases.Lease{}, err
	}
	now := s.Now().UTC()
	ttl := time.Duration(req.TTLSeconds) * time.Second
	proof := leases.Proof{ID: req.LeaseID, Token: req.Token}
	var out leases.Lease
	err = s.runTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := receipts.LockHead(ctx, tx, t.spaceID); err != nil {
			return err
		}
		op, ok := leaseOps[action]
		if !ok {
			op = leases.OpRelease // as before: any other action releases
		}
		var err error
		out, err = leases.Apply(ctx, tx, t.spaceID, boardTarget(t), p.KeyID, op, ttl, proof, now)
		if err != nil {
			return err
		}
		_, err = receipts.Append(ctx, tx, t.spaceID, receipts.Entry{Kind: receipts.KindBoard, Action: action, ActorKey: p.KeyID,
			ObjectIDs: []string{out.ID}, Detail: map[string]any{"type": t.typ, "token": out.Token}}, now)
		return err
	})
	return out, wrap("lease", err)
}
