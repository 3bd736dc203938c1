package state

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/leases"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/strictjson"
)

// LeaseProof is the lease a working-memory write carries (WriteRequest.Lease, leases.Proof):
// its lease_id and fencing token.
type LeaseProof = leases.Proof

// LeaseRequest is the body of POST /v1/agent-state/lease, /lease/renew and /lease/release
// (issue 31): the state (Scope and, with a person key, Agent, as a write names it), the time
// to live in seconds (acquire and renew: leases.MinTTLSeconds..leases.MaxTTLSeconds) and, to
// renew or release, the lease (LeaseID, Token).
type LeaseRequest struct {
	Scope      *Scope `json:"scope"`
	Agent      string `json:"agent"`
	TTLSeconds int    `json:"ttl_seconds"`
	LeaseID    string `json:"lease_id"`
	Token      int64  `json:"token"`
}

// Lease actions (receipts, kind agent_memory).
const (
	ActionLease   = "agent_state.lease"
	ActionRenew   = "agent_state.lease_renew"
	ActionRelease = "agent_state.lease_release"
)

// leaseTarget names t's state in the leases table: its agent and keyed scope hash (never the
// scope id, WM-3).
func leaseTarget(t target) string { return "state:" + t.agent + ":" + t.scopeHash }

// Lease acquires, renews or releases (action: ActionLease, ActionRenew, ActionRelease) a
// lease on the working-memory state req names, for p (who must be able to write it, as
// Write), with a receipt naming the token but not the scope, in one transaction. The
// fencing token grows with every grant of the state (leases.Acquire). Errors: as Write's
// resolve (fault.Forbidden, fault.Invalid), leases.CheckTTL, 409 lease_held (acquire while
// another lease is in force), 409 lease_lost (renew or release of a lease not in force).
// The space's object types are snap's (issue 30 §1; the zero Snapshot reads them from the
// store).
func (s *Service) Lease(ctx context.Context, snap spaces.Snapshot, p auth.Principal, action string, req LeaseRequest) (leases.Lease, error) {
	if action != ActionLease && action != ActionRenew && action != ActionRelease {
		return leases.Lease{}, errors.New("state: unknown lease action " + action)
	}
	if action != ActionRelease {
		if err := leases.CheckTTL(req.TTLSeconds); err != nil {
			return leases.Lease{}, err
		}
	} else if req.LeaseID == "" {
		return leases.Lease{}, invalid("lease_id", "lease_id and token name the lease to release")
	}
	if action == ActionRenew && req.LeaseID == "" {
		return leases.Lease{}, invalid("lease_id", "lease_id and token name the lease to renew")
	}
	t, err := s.resolve(ctx, snap, p, req.Scope, req.Agent, "")
	if err != nil {
		return leases.Lease{}, err
	}
	if !t.declared {
		return leases.Lease{}, fault.New(fault.Invalid, "not_declared", "this agent has no declared working-memory schema; a lease guards declared states only").With("member", "agent")
	}
	now := s.Now().UTC()
	var out leases.Lease
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		out, err = leaseStep(ctx, tx, t, p.KeyID, action, req, now)
		if err != nil {
			return err
		}
		if _, err := receipts.LockHead(ctx, tx, t.spaceID); err != nil {
			return err
		}
		_, err = receipts.Append(ctx, tx, t.spaceID, receipts.Entry{Kind: receipts.KindAgentMemory, Action: action, ActorKey: p.KeyID,
			ObjectIDs: []string{out.ID}, Detail: map[string]any{"agent": t.agent, "scope_kind": t.scopeKind, "token": out.Token}}, now)
		return err
	})
	if err != nil {
		return leases.Lease{}, wrapLease(err)
	}
	return out, nil
}

// leaseOps maps the lease actions to their operations (leases.Apply).
var leaseOps = map[string]leases.Op{ActionLease: leases.OpAcquire, ActionRenew: leases.OpRenew, ActionRelease: leases.OpRelease}

// leaseStep is Lease's change of the lease row inside tx (leases.Apply).
func leaseStep(ctx context.Context, tx bun.Tx, t target, holder, action string, req LeaseRequest, now time.Time) (leases.Lease, error) {
	return leases.Apply(ctx, tx, t.spaceID, leaseTarget(t), holder, leaseOps[action], time.Duration(req.TTLSeconds)*time.Second,
		leases.Proof{ID: req.LeaseID, Token: req.Token}, now)
}

// wrapLease keeps a fault as it is (the API answers it) and names any other error.
func wrapLease(err error) error {
	if fault.As(err) != nil {
		return err
	}
	return fmt.Errorf("state: lease: %w", err)
}

// fenced reports whether a write of t (carrying proof, or nil) goes through the fencing
// check of writeFenced: it carries a lease, or a lease row exists for the state (one was
// ever granted) and the schema's leases are not advisory. A declared state never leased
// costs one point read of the leases table; an advisory one without a lease costs nothing.
//
// A write without a lease that read no lease in force before a grant committed may still
// land just after that grant (it raced the grant and is ordered before it); from then on
// every write is fenced in the lease row's transaction. Versions keep either order from
// losing anything: the holder's next cas write meets the new version.
func (s *Service) fenced(ctx context.Context, t target, proof *LeaseProof) (bool, error) {
	if proof != nil {
		return true, nil
	}
	if !t.declared || t.schema.LeaseAdvisory() {
		return false, nil
	}
	return leases.Exists(ctx, s.DB, t.spaceID, leaseTarget(t))
}

// writeFenced is Write for a fenced state (fenced): each attempt is one transaction holding
// the lease row (locked on PostgreSQL; SQLite's transactions run one at a time) with the
// fencing check (leases.Check: 409 lease_lost for a lease not in force, 409 lease_held for a
// write without the lease while one is held and leases are not advisory) and the write under
// the state row's lock, so a lease granted after the check waits for the write to commit.
// pii fields are masked before the transaction (premask), so no call out runs inside it.
func (s *Service) writeFenced(ctx context.Context, w *pendingWrite) (WriteResult, error) {
	t, body, err := s.premask(ctx, w.t, w.body)
	if err != nil {
		return WriteResult{}, err
	}
	w.t, w.body = t, body
	// SQLite has no row locks (and no FOR UPDATE): its transactions run one at a time.
	lock := !db.IsSQLite(s.DB)
	for attempt := 0; ; attempt++ {
		var res WriteResult
		var retry bool
		err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := leases.Check(ctx, tx, t.spaceID, leaseTarget(t), w.req.Lease, t.schema.LeaseAdvisory(), s.Now().UTC()); err != nil {
				return err
			}
			var err error
			res, retry, err = s.tryWrite(ctx, tx, lock, w, nil)
			return err
		})
		s.seen.drop(t) // written inside a transaction: the next write reads the stored row
		if errors.Is(err, errOverQuota) {
			return res, nil
		}
		if err != nil || !retry {
			return res, err
		}
		if attempt >= maxAttempts {
			busy := fault.New(fault.Unavailable, "agent_state_busy", "too many concurrent writers on this state; retry")
			busy.RetryAfter = time.Second
			return WriteResult{}, busy
		}
	}
}

// premask checks and masks body's pii fields (checkValue, then maskValue) and returns a
// target whose schema no longer marks them pii, so tryWrite, run inside a transaction, does
// not call the masker again; a target and body without pii fields come back unchanged.
func (s *Service) premask(ctx context.Context, t target, body strictjson.Object) (target, strictjson.Object, error) {
	if !t.masks(body) {
		return t, body, nil
	}
	fields := make(map[string]spaces.Field, len(t.schema.Fields))
	for name, f := range t.schema.Fields {
		fields[name] = f
	}
	out := make(strictjson.Object, len(body))
	for name, raw := range body {
		f, ok := fields[name]
		if ok && f.PII {
			if err := checkValue(name, f, raw); err != nil {
				return t, nil, err
			}
			masked, err := s.maskValue(ctx, t.spaceID, raw)
			if err != nil {
				return t, nil, err
			}
			raw = masked
			f.PII = false
			fields[name] = f
		}
		out[name] = raw
	}
	t.schema.Fields = fields
	return t, out, nil
}
