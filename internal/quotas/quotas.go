// Package quotas is the storage limits of a space (issue 34 §1, QT-1, MS-3): their names and
// defaults, the error of a write past one, the usage the Console shows, daily usage samples and
// the recount of every counter from the rows.
//
// The counting itself lives in the database (migration 20261204140000): triggers on
// agent_states, turns, knowledge_documents and knowledge_chunks (and boards, migration
// 20261206040000) move quota_usage inside the
// statement that changes a row, so a count is exact across replicas (it changes under the
// row locks and in the transaction of the write, whichever path writes), and a statement
// that takes a count past its limit fails whole with "quota_exceeded:<quota>" (Exceeded).
package quotas

import (
	"context"
	"regexp"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// The quotas, by the member of features.quotas that sets each (and the quota column of
// quota_usage). A keyed quota is counted per scope key: a scope kind, a conversation's (or
// task's) keyed hash, a knowledge base id.
const (
	StatesPerSpace       = "states_per_space"
	StatesPerScopeKind   = "states_per_scope_kind" // keyed by scope kind
	StateBytesPerSpace   = "state_bytes_per_space"
	TurnsPerSpace        = "turns_per_space"
	TurnsPerConversation = "turns_per_conversation" // keyed by the conversation's or task's scope hash
	DocumentsPerBase     = "documents_per_base"     // keyed by knowledge base id
	ChunksPerBase        = "chunks_per_base"        // keyed by knowledge base id
	BoardsPerSpace       = "boards_per_space"       // board instances (issue 31), migration 20261206040000
)

// Names lists every quota in the order the Console shows them.
var Names = []string{StatesPerSpace, StatesPerScopeKind, StateBytesPerSpace, TurnsPerSpace, TurnsPerConversation, DocumentsPerBase, ChunksPerBase, BoardsPerSpace}

// Defaults are the limits of a space whose features document sets none: sized for one
// embedded deployment (SQLite on one machine), generous for an agent fleet's working memory
// yet bounding a runaway writer. They must equal migration 20261204140000's (a test writes at
// each default's boundary).
var Defaults = map[string]int64{
	StatesPerSpace:       100000,
	StatesPerScopeKind:   100000,
	StateBytesPerSpace:   1 << 30, // 1 GiB of canonical state JSON
	TurnsPerSpace:        1000000,
	TurnsPerConversation: 10000,
	DocumentsPerBase:     10000,
	ChunksPerBase:        500000,
	BoardsPerSpace:       10000, // migration 20261206040000's
}

// Limit returns the space's limit of quota (for StatesPerScopeKind, of scope kind kind; kind is
// ignored otherwise): the features document's value, else the default.
func Limit(f spaces.Features, quota, kind string) int64 {
	q := f.Quotas
	set := map[string]int64{
		StatesPerSpace: q.StatesPerSpace, StatesPerScopeKind: q.StatesPerScopeKind[kind], StateBytesPerSpace: q.StateBytesPerSpace,
		TurnsPerSpace: q.TurnsPerSpace, TurnsPerConversation: q.TurnsPerConversation,
		DocumentsPerBase: q.DocumentsPerBase, ChunksPerBase: q.ChunksPerBase, BoardsPerSpace: q.BoardsPerSpace,
	}[quota]
	if set > 0 {
		return set
	}
	return Defaults[quota]
}

// CodeExceeded is the error code of a write past a quota (409), and ReasonOverQuota the reason
// of a working-memory write not stored for one (200, stored:false, WM-8's rule).
const (
	CodeExceeded    = "quota_exceeded"
	ReasonOverQuota = "over_quota"
)

// exceededPattern finds the trigger's message in a driver's error text.
var exceededPattern = regexp.MustCompile(`quota_exceeded:([a-z_]+)`)

// Exceeded reports whether err is a statement the database refused for a quota, and which.
// A *fault.Error (already translated) answers its "quota" detail.
func Exceeded(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	if fe := fault.As(err); fe != nil {
		q, ok := fe.Details["quota"].(string)
		return q, ok && fe.Code == CodeExceeded
	}
	m := exceededPattern.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Error is fault.Conflict quota_exceeded naming quota and its limit (details "quota",
// "limit"): the 409 of a write past a quota outside working memory.
func Error(quota string, limit int64) *fault.Error {
	return fault.New(fault.Conflict, CodeExceeded,
		"this write would pass the space's quota %s of %d (features.quotas.%s); nothing was stored", quota, limit, quota).
		With("quota", quota).With("limit", limit)
}

// Translate returns err as Error when it is a database refusal for a quota (Exceeded), with the
// limit from f (kind for a per-kind quota), and err unchanged otherwise.
func Translate(err error, f spaces.Features, kind string) error {
	q, ok := Exceeded(err)
	if !ok || fault.As(err) != nil {
		return err
	}
	return Error(q, Limit(f, q, kind))
}

// Refusal is err as Error when it is a database refusal for a quota (Exceeded), with the limit
// the features document of space spaceID sets (read through d; the default when it cannot be
// read), and err unchanged otherwise: what a write outside working memory answers (409).
func Refusal(ctx context.Context, d *bun.DB, spaceID string, err error) error {
	q, ok := Exceeded(err)
	if !ok || fault.As(err) != nil {
		return err
	}
	f, ferr := spaces.Documents{DB: d}.Features(ctx, spaceID)
	if ferr != nil {
		f = spaces.Features{} // the refusal stands; only its limit detail falls back to the default
	}
	return Error(q, Limit(f, q, ""))
}
