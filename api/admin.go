package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// createKey: POST /v1/keys (role admin) -> 201 {"key_id", "key"}; the key is shown once.
func (s *Server) createKey(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
		s.writeError(c, err) // before the body is read (issue 11 §1)
		return
	}
	var spec auth.KeySpec
	if err := bind(c, &spec); err != nil {
		s.writeError(c, err)
		return
	}
	keyID, key, err := spaces.MintKey(s.ctx(c), s.DB, p, spec, s.Now())
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusCreated, gin.H{"key_id": keyID, "key": key})
}

// revokeKey: DELETE /v1/keys/{key_id} (role admin) -> 204; effective on the next request.
func (s *Server) revokeKey(c *gin.Context) {
	if err := spaces.RevokeKey(s.ctx(c), s.DB, principal(c), c.Param("key_id"), s.Now()); err != nil {
		s.writeError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// MintKey is spaces.MintKey on s's database and clock: POST /v1/keys and the Console's Keys
// screen mint through it (role admin; the key is returned once).
func (s *Server) MintKey(ctx context.Context, p auth.Principal, spec auth.KeySpec) (keyID, key string, err error) {
	return spaces.MintKey(ctx, s.DB, p, spec, s.Now())
}

// RevokeKey is spaces.RevokeKey on s's database and clock: DELETE /v1/keys/{key_id} and the
// Console's Keys screen revoke through it (role admin).
func (s *Server) RevokeKey(ctx context.Context, p auth.Principal, keyID string) error {
	return spaces.RevokeKey(ctx, s.DB, p, keyID, s.Now())
}

// getDocument: GET /v1/documents/{name} (any person key) -> the document JSON, with its
// version in the ETag-like header X-Document-Version.
func (s *Server) getDocument(c *gin.Context) {
	p := principal(c)
	if p.IsAgent() {
		s.writeError(c, fault.New(fault.Forbidden, "role_required", "documents are read by people"))
		return
	}
	text, version, err := s.Docs.Get(s.ctx(c), p.SpaceID, c.Param("name"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Header("X-Document-Version", strconv.FormatInt(version, 10))
	c.Data(http.StatusOK, "application/json; charset=utf-8", []byte(text))
}

// putDocument: PUT /v1/documents/{name}; features needs role security, object-types admin or
// integration, views security or admin (CTX-1). Invalid documents are 400 naming the member and change nothing; a space whose
// documents change only through change requests (api/changes.go) answers 409
// direct_put_disabled and changes nothing.
func (s *Server) putDocument(c *gin.Context) {
	p := principal(c)
	if err := s.Docs.MayPut(p, c.Param("name")); err != nil {
		s.writeError(c, err) // before the body is read (issue 11 §1)
		return
	}
	data, err := readBody(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	text, version, err := s.Docs.Put(s.ctx(c), s.DB, p, c.Param("name"), data, s.Now())
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Header("X-Document-Version", strconv.FormatInt(version, 10))
	c.Data(http.StatusOK, "application/json; charset=utf-8", []byte(text))
}

// listReceipts: GET /v1/receipts?after=&limit= (admin or compliance) -> {"receipts": [...],
// "batches": [...]}: the sealed receipts with seq > after in chain order, and the chain
// entries holding them (enough to recompute that part of the chain). The space's unsealed
// receipts are sealed first, so every committed receipt is listed.
func (s *Server) listReceipts(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin, auth.RoleCompliance); err != nil {
		s.writeError(c, err)
		return
	}
	after, limit, err := page(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var list []receipts.Receipt
	var batches []receipts.Batch
	err = receipts.Read(s.ctx(c), s.DB, p.SpaceID, func(ctx context.Context) error {
		var err error
		if list, err = receipts.List(ctx, s.DB, p.SpaceID, after, limit); err != nil {
			return err
		}
		batches, err = receipts.BatchesOf(ctx, s.DB, p.SpaceID, list)
		return err
	})
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"receipts": list, "batches": batches})
}

// verifyReceipts: GET /v1/receipts/verify (admin or compliance) -> {"ok", "count" (receipts
// recomputed), "batches" (chain entries), "unsealed"} or, when the chain does not hold, the
// first broken receipt and entry and why ("broken", "broken_batch", "reason"). The space's
// unsealed receipts are sealed first.
func (s *Server) verifyReceipts(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin, auth.RoleCompliance); err != nil {
		s.writeError(c, err)
		return
	}
	var v receipts.Verification
	err := receipts.Read(s.ctx(c), s.DB, p.SpaceID, func(ctx context.Context) error {
		var err error
		v, err = receipts.Verify(ctx, s.DB, p.SpaceID)
		return err
	})
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, v)
}

// receiptProof: GET /v1/receipts/{receipt_id}/proof (admin or compliance) -> 200 {"receipt",
// "leaf_index", "leaf_hash", "path", "batch", "log"}: the receipt's inclusion proof in its
// chain entry and, once it is in a checkpoint (about a second and a half after it was
// sealed), in the deployment's log against the latest signed checkpoint ("log": index,
// checkpoint, hashes; receipts.Proof; `agentmemory receipts verify-proof` checks both
// offline). 404 receipt_not_found for an id not in the caller's space.
func (s *Server) receiptProof(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin, auth.RoleCompliance); err != nil {
		s.writeError(c, err)
		return
	}
	var proof receipts.Proof
	err := receipts.Read(s.ctx(c), s.DB, p.SpaceID, func(ctx context.Context) error {
		var err error
		proof, err = receipts.Prove(ctx, s.DB, p.SpaceID, c.Param("receipt_id"))
		return err
	})
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, proof)
}

// receiptsCheckpoint: GET /v1/receipts/checkpoint (admin or compliance) -> 200 {"size",
// "hash", "note", "at"}: the latest signed checkpoint of the deployment's receipt log (issue
// 32; receipts.Checkpoint: a sumdb note of the tree's size and root, Ed25519 under
// receipts.CheckpointName). Keep it: `agentmemory receipts verify-proof` checks later proofs
// and consistency against it. 404 checkpoint_not_found while the log is empty; 503
// signing_unavailable without a signing key.
func (s *Server) receiptsCheckpoint(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin, auth.RoleCompliance); err != nil {
		s.writeError(c, err)
		return
	}
	if s.Signer == nil {
		s.writeError(c, errSigningUnavailable())
		return
	}
	cp, ok, err := receipts.LatestCheckpoint(s.ctx(c), s.DB)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if !ok {
		s.writeError(c, fault.New(fault.NotFound, "checkpoint_not_found", "the receipt log has no checkpoint yet: one is signed within a second of its first receipts"))
		return
	}
	c.Header("Cache-Control", "no-store")
	c.PureJSON(http.StatusOK, cp)
}

// receiptsConsistency: GET /v1/receipts/consistency?from=&to= (admin or compliance) -> 200
// {"from": {size, hash}, "to": {size, hash}, "hashes", "checkpoint"}: the proof that the
// receipt log's tree of size from is a prefix of its tree of size to (default: the latest
// checkpoint's), receipts.Consistency. 400 invalid_tree_range unless 1 <= from <= to <= the
// latest checkpoint's size.
func (s *Server) receiptsConsistency(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin, auth.RoleCompliance); err != nil {
		s.writeError(c, err)
		return
	}
	from, err := queryInt(c, "from", 0, 1, 1<<62)
	if err != nil {
		s.writeError(c, err)
		return
	}
	to, err := queryInt(c, "to", 0, 1, 1<<62)
	if err != nil {
		s.writeError(c, err)
		return
	}
	proof, err := receipts.ProveConsistency(s.ctx(c), s.DB, from, to)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, proof)
}

// page reads the paging parameters of a log: after (a sequence number, default 0) and limit
// (1..1000, default 100).
func page(c *gin.Context) (after int64, limit int, err error) {
	if after, err = queryInt(c, "after", 0, 0, 1<<62); err != nil {
		return 0, 0, err
	}
	l, err := queryInt(c, "limit", 100, 1, 1000)
	return after, int(l), err
}

// queryInt reads an integer query parameter within [min, max], def when absent.
func queryInt(c *gin.Context, name string, def, min, max int64) (int64, error) {
	raw, ok := c.GetQuery(name)
	if !ok || raw == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < min || n > max {
		return 0, fault.New(fault.Invalid, "invalid_query", "%s must be an integer from %d to %d", name, min, max).With("member", name)
	}
	return n, nil
}
