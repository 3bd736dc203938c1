package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Lease sentinels, matched by errors.Is against an *Error (409): ErrLeaseLost, the lease a
// write or renewal carried is no longer the one in force (expired, released, superseded by a
// newer token); ErrLeaseHeld, another handler holds a lease on the target.
var (
	ErrLeaseLost = errors.New("agentmemory: lease lost (409 lease_lost)")
	ErrLeaseHeld = errors.New("agentmemory: lease held by another handler (409 lease_held)")
)

// Board is one board of the key's space (issue 31, docs/boards.md): a type declared with
// ownership shared and an id. The key needs a grant on it (read for Get, read_write for Put
// and leases): without one every call is *Error 403 board_grant_required.
type Board struct {
	c    *Client
	Type string
	ID   string
}

// Board returns the board typ:id (no request is sent).
func (c *Client) Board(typ, id string) *Board { return &Board{c: c, Type: typ, ID: id} }

// BoardState is a board as read: Body its fields (empty when never written), Version the
// version to pass to Put as ifVersion, UpdatedAt its last write (nil when none).
type BoardState struct {
	Body      map[string]json.RawMessage `json:"body"`
	Version   int64                      `json:"version"`
	UpdatedAt *time.Time                 `json:"updated_at"`
}

// Settled says which rule settled a field both this write and another since ifVersion
// changed; Rejected marks the field whose rule refused the write.
type Settled struct {
	Field    string `json:"field"`
	Rule     string `json:"rule"`
	Rejected bool   `json:"rejected,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// BoardPutResult is the answer of Put: Stored and the board's Version after it, Settled the
// rule of every field a rule settled; Reason ("not_declared_field", "over_cap") and Fields
// when not stored.
type BoardPutResult struct {
	Stored  bool      `json:"stored"`
	Version int64     `json:"version"`
	Settled []Settled `json:"settled"`
	Reason  *string   `json:"reason"`
	Fields  []string  `json:"fields,omitempty"`
}

// Get reads the board (POST /v1/boards/read).
func (b *Board) Get(ctx context.Context) (BoardState, error) {
	var out BoardState
	if _, _, err := b.c.do(ctx, "POST", "/v1/boards/read", map[string]any{"type": b.Type, "id": b.ID}, &out); err != nil {
		return BoardState{}, err
	}
	if out.Body == nil {
		out.Body = map[string]json.RawMessage{}
	}
	return out, nil
}

// Put writes the fields of body (a JSON object: a map or a struct) at ifVersion, the version
// this handler read (PUT /v1/boards). At an older version than the stored one the service
// merges field by field by the type's conflict rules and names each in Settled. Errors:
// *Error; errors.Is(err, ErrConflict) for 412 board_conflict (a rule rejected the write, or
// its base is no longer kept: Get and retry), ErrLeaseHeld when another handler holds a lease.
func (b *Board) Put(ctx context.Context, body any, ifVersion int64) (BoardPutResult, error) {
	return b.put(ctx, body, ifVersion, nil)
}

func (b *Board) put(ctx context.Context, body any, ifVersion int64, l *Lease) (BoardPutResult, error) {
	req := map[string]any{"type": b.Type, "id": b.ID, "if_version": ifVersion, "body": body}
	if l != nil {
		req["lease"] = map[string]any{"lease_id": l.ID, "token": l.Token}
	}
	var out BoardPutResult
	if _, _, err := b.c.do(ctx, "PUT", "/v1/boards", req, &out); err != nil {
		return BoardPutResult{}, err
	}
	return out, nil
}

// Lease is a lease on a board: one handler at a time, with a fencing token above every
// earlier one of the board. Write through Lease.Put; end it with Release (defer it).
type Lease struct {
	board     *Board
	ID        string    `json:"lease_id"`
	Token     int64     `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Lease acquires a lease on the board for ttl (whole seconds, 1 s to 1 h): ErrLeaseHeld
// while another handler holds one. Use it as
//
//	l, err := board.Lease(ctx, 30*time.Second)
//	if err != nil { ... }
//	defer l.Release(ctx)
func (b *Board) Lease(ctx context.Context, ttl time.Duration) (*Lease, error) {
	l := &Lease{board: b}
	if err := b.lease(ctx, "/v1/boards/lease", ttl, l, l); err != nil {
		return nil, err
	}
	return l, nil
}

func (b *Board) lease(ctx context.Context, path string, ttl time.Duration, proof *Lease, out any) error {
	req := map[string]any{"type": b.Type, "id": b.ID}
	if ttl > 0 {
		req["ttl_seconds"] = int(ttl / time.Second)
	}
	if proof != nil && proof.ID != "" {
		req["lease_id"], req["token"] = proof.ID, proof.Token
	}
	_, _, err := b.c.do(ctx, "POST", path, req, out)
	return err
}

// Put writes as Board.Put, carrying the lease: ErrLeaseLost once it is no longer in force
// (then nothing was written; take a new lease and read again).
func (l *Lease) Put(ctx context.Context, body any, ifVersion int64) (BoardPutResult, error) {
	return l.board.put(ctx, body, ifVersion, l)
}

// Renew extends the lease to ttl from now: ErrLeaseLost when it is no longer in force.
func (l *Lease) Renew(ctx context.Context, ttl time.Duration) error {
	var out Lease
	if err := l.board.lease(ctx, "/v1/boards/lease/renew", ttl, l, &out); err != nil {
		return err
	}
	l.ExpiresAt = out.ExpiresAt
	return nil
}

// Release ends the lease (its token stays the board's last): ErrLeaseLost when it had
// already ended. Meant for defer: a lease that expired is released already.
func (l *Lease) Release(ctx context.Context) error {
	if err := l.board.lease(ctx, "/v1/boards/lease/release", 0, l, nil); err != nil {
		return fmt.Errorf("sdk: release lease: %w", err)
	}
	return nil
}

// BridgedBoard is a board of another space read through a bridge (issue 31, docs/boards.md
// "Bridges"): read only. Without a bridge both spaces approved that lists this agent and the
// board, and for a board never written, Get is *Error 404 board_not_found, the same answer
// as for a space that does not exist.
type BridgedBoard struct {
	c     *Client
	Space string
	Type  string
	ID    string
}

// BridgedBoard returns the board typ:id of space (another space's id), read through a
// bridge (no request is sent).
func (c *Client) BridgedBoard(space, typ, id string) *BridgedBoard {
	return &BridgedBoard{c: c, Space: space, Type: typ, ID: id}
}

// Get reads the board through the bridge (POST /v1/boards/read with space).
func (b *BridgedBoard) Get(ctx context.Context) (BoardState, error) {
	var out BoardState
	if _, _, err := b.c.do(ctx, "POST", "/v1/boards/read", map[string]any{"type": b.Type, "id": b.ID, "space": b.Space}, &out); err != nil {
		return BoardState{}, err
	}
	if out.Body == nil {
		out.Body = map[string]json.RawMessage{}
	}
	return out, nil
}
