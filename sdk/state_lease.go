package sdk

import (
	"context"
	"fmt"
	"time"
)

// leaseProof is the lease a working-memory write carries on the wire.
type leaseProof struct {
	ID    string `json:"lease_id"`
	Token int64  `json:"token"`
}

// StateLease is a lease on a working state (issue 31): one handler at a time, with a
// fencing token above every earlier one of the state. Write through StateLease.Put; end it
// with Release (defer it).
type StateLease struct {
	state     *StateHandle
	ID        string    `json:"lease_id"`
	Token     int64     `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Lease acquires a lease on the state for ttl (whole seconds, 1 s to 1 h): an error matching
// ErrLeaseHeld while another handler holds one. While it is held, writes without it fail
// with ErrLeaseHeld unless the schema's leases are advisory. Use it as
//
//	l, err := state.Lease(ctx, 30*time.Second)
//	if err != nil { ... }
//	defer l.Release(ctx)
func (h *StateHandle) Lease(ctx context.Context, ttl time.Duration) (*StateLease, error) {
	l := &StateLease{state: h}
	if err := l.call(ctx, "/v1/agent-state/lease", ttl, false, l); err != nil {
		return nil, err
	}
	return l, nil
}

// call posts a lease request of l's state to path: ttl when above zero, l's proof with proof.
func (l *StateLease) call(ctx context.Context, path string, ttl time.Duration, proof bool, out any) error {
	req := map[string]any{"scope": l.state.scope}
	if l.state.agent != "" {
		req["agent"] = l.state.agent
	}
	if ttl > 0 {
		req["ttl_seconds"] = int(ttl / time.Second)
	}
	if proof {
		req["lease_id"], req["token"] = l.ID, l.Token
	}
	_, _, err := l.state.c.do(ctx, "POST", path, req, out)
	return err
}

// Put writes as StateHandle.Put, carrying the lease: an error matching ErrLeaseLost once it
// is no longer in force (then nothing was written; take a new lease and read again). A write
// under a lease is never queued when the service is unreachable: the error is returned.
func (l *StateLease) Put(ctx context.Context, body map[string]any, opts ...PutOption) (WriteResult, error) {
	proof := &leaseProof{ID: l.ID, Token: l.Token}
	return l.state.Put(ctx, body, append(opts, func(w *writeRequest) { w.Lease = proof })...)
}

// Renew extends the lease to ttl from now: ErrLeaseLost when it is no longer in force.
func (l *StateLease) Renew(ctx context.Context, ttl time.Duration) error {
	var out StateLease
	if err := l.call(ctx, "/v1/agent-state/lease/renew", ttl, true, &out); err != nil {
		return err
	}
	l.ExpiresAt = out.ExpiresAt
	return nil
}

// Release ends the lease (its token stays the state's last): ErrLeaseLost when it had
// already ended. Meant for defer.
func (l *StateLease) Release(ctx context.Context) error {
	if err := l.call(ctx, "/v1/agent-state/lease/release", 0, true, nil); err != nil {
		return fmt.Errorf("sdk: release lease: %w", err)
	}
	return nil
}
