// Package erasure is the erasure registry (issue 12 §2, GOV-2, WM-13, MS-4): every package
// that stores personal data registers an Eraser naming the tables and columns it covers, and
// internal/compliance only orders the erasers, records what each reports and certifies. A
// table holding sealed or hashed subject data that no registered eraser covers fails the
// coverage check (Uncovered over PersonalColumns of a migrated database).
//
// Nothing here holds personal data beyond the in-memory Target of one erasure: keyed hashes,
// profile ids and, for a conversation erasure, the conversation id until the erasure ends.
package erasure

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
)

// Target kinds.
const (
	Subject      = "subject"
	Conversation = "conversation"
)

// Target is what one erasure covers, resolved: the space, the kind (Subject or
// Conversation), for a subject the keyed hashes of all their handles and their profile ids,
// for a conversation its keyed scope hash and (in memory only) its id.
type Target struct {
	SpaceID        string
	Kind           string
	HandleHashes   []string
	ProfileIDs     []string
	ScopeHash      string
	ConversationID string
	// Content is the subject's handles and names for the content probe (issue 29 §1b), in
	// memory only; nil for a conversation, or when nothing of the subject is known in clear.
	Content *Matcher
}

// Reach is what an eraser removed, or what a probe still found: item kind (e.g.
// "agent_state", "turn") -> the ids of the items. A nil or empty Reach means nothing.
type Reach map[string][]string

// Count is the number of items in r, all kinds together.
func (r Reach) Count() int {
	n := 0
	for _, ids := range r {
		n += len(ids)
	}
	return n
}

// Add puts ids of kind into r (nothing for no ids).
func (r Reach) Add(kind string, ids ...string) {
	if len(ids) > 0 {
		r[kind] = append(r[kind], ids...)
	}
}

// Column names one column of one table.
type Column struct {
	Table  string `json:"table"`
	Column string `json:"column"`
}

func (c Column) String() string { return c.Table + "." + c.Column }

// Eraser is one store's side of erasure and export (issue 12 §2, issue 29 §4): the only
// interface a store that holds personal data implements, registered once in app.
//   - Name is stable and short ("state", "turns"...): certificates and the erasure row list
//     stores by it, and the erasure workflow erases them by it, in registration order.
//   - Covers lists the tables and columns holding subject data it erases (the coverage checks
//     and the vacuum list are derived from it).
//   - EraseSubject deletes what Target reaches inside tx (the compliance step's transaction,
//     which also records the Reach) and returns it; a second call finds nothing.
//   - Residue looks (read only) for anything of Target still stored, by keyed hash; it must
//     return an empty Reach after EraseSubject committed (the probe and the preview).
//   - Export returns, read through idb, what the store holds of a subject Target for the data
//     package (GOV-3); a conversation Target, or a store with nothing to export, gives the
//     zero Export.
//   - ContentProber (Searched, ProbeContent, EraseFound) looks for the subject by content, not
//     linkage (issue 29 §1b): part of the interface, so a new store cannot forget it.
//   - Backups says how what it erases of Target is gone from backups (issue 29 §1, ER-1): one
//     of Shredded, RebuiltOnRestore, HoldsNone or NotSealed, the certificate's per-store
//     "backups". Part of the interface (as ContentProber), so a wrapped eraser reports its
//     own reach and a store that does not say does not compile.
//
// Stored records that do not decode are an error (fault "corrupt_record"), never "nothing".
type Eraser interface {
	Name() string
	Covers() []Column
	EraseSubject(ctx context.Context, tx bun.Tx, t Target) (Reach, error)
	Residue(ctx context.Context, idb bun.IDB, t Target) (Reach, error)
	Export(ctx context.Context, idb bun.IDB, t Target) (Export, error)
	Backups(t Target) string
	ContentProber
}

// Registry holds the erasers in registration order; safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	erasers []Eraser
}

// Register adds e; a second eraser of the same name replaces the first (so wiring twice in
// one process, as tests do, keeps one of each).
func (r *Registry) Register(e Eraser) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, x := range r.erasers {
		if x.Name() == e.Name() {
			r.erasers[i] = e
			return
		}
	}
	r.erasers = append(r.erasers, e)
}

// Get returns the eraser named name, or nil.
func (r *Registry) Get(name string) Eraser {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, x := range r.erasers {
		if x.Name() == name {
			return x
		}
	}
	return nil
}

// Names returns the registered erasers' names in registration order: what an erasure row
// records and its workflow erases one by one.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.erasers))
	for _, x := range r.erasers {
		out = append(out, x.Name())
	}
	return out
}

// Erasers returns the registered erasers in registration order.
func (r *Registry) Erasers() []Eraser {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Eraser(nil), r.erasers...)
}

// Exempt are columns that match the personal-data rule but hold no subject data an erasure
// must remove, each with the reason.
var Exempt = map[Column]string{
	{"receipts", "prev_hash"}:        "hash of the previous receipt in the chain (over ids and kinds only)",
	{"receipt_batches", "prev_hash"}: "hash of the previous entry of the receipt chain (over ids and kinds only)",
	{"note_requests", "body_hash"}:   "idempotency hash of an agent-note request body (AM-12: notes are erased by source)",
	{"note_requests", "key_id"}:      "the API key (agent or person) that sent an agent-note request, not a subject key",
	{"erasures", "target_hash"}:      "the erasure's own record: the keyed hash it erased, kept as proof (GOV-2)",
	{"erasures", "scope_hashes"}:     "the erasure's own record: the keyed hashes it resolved, kept as proof (GOV-2)",
	{"erasures", "profile_ids"}:      "the erasure's own record: the profile ids it erased (the profiles are gone)",
	{"erasures", "key_ids"}:          "the erasure's own record: the key ids it destroyed (the keys are gone)",
	{"erasures", "sealed_needles"}:   "the subject's handles and names for the content probe, sealed under the erasure's own key, destroyed (and the column cleared) when the erasure ends (issue 29 §1b)",
	{"erasures", "sealed_needles"}:   "the subject's handles and names for the content probe (issue 29 §1b), sealed under the erasure's own key, set NULL and the key destroyed when the erasure ends",
	{"notes", "content_hash"}:        "hash of an agent note's normalised content, to answer a duplicate note (AM-12: notes never hold personal data; the gate refuses it)",
}

// Personal reports whether a column holds sealed or hashed subject data by its name: a
// keyed hash (`*_hash`, `*_hashes`), a subject reference (`subject*`), sealed bytes
// (`sealed*`), a profile id (`profile_id`, `profile_ids`) or a subject key id (`key_id`,
// `key_ids`). The rule is read off the migrations: every column holding a handle's keyed
// hash, sealed profile data or a reference to a profile or its key is named so.
func Personal(column string) bool {
	c := strings.ToLower(column)
	switch {
	case strings.HasSuffix(c, "_hash"), strings.HasSuffix(c, "_hashes"),
		strings.HasPrefix(c, "subject"), strings.HasPrefix(c, "sealed"),
		c == "profile_id", c == "profile_ids", c == "key_id", c == "key_ids":
		return true
	}
	return false
}

// PersonalColumns lists, sorted, the columns of every table of d (after migrating) that
// Personal says hold subject data. SQLite reads sqlite_master and table_info; PostgreSQL
// reads information_schema.columns of the current schema.
func PersonalColumns(ctx context.Context, d *bun.DB) ([]Column, error) {
	var all []Column
	if db.IsSQLite(d) {
		var tables []string
		if err := d.NewRaw("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").Scan(ctx, &tables); err != nil {
			return nil, fmt.Errorf("erasure: list tables: %w", err)
		}
		for _, t := range tables {
			var cols []string
			if err := d.NewRaw("SELECT name FROM pragma_table_info(?)", t).Scan(ctx, &cols); err != nil {
				return nil, fmt.Errorf("erasure: list columns: %w", err)
			}
			for _, c := range cols {
				all = append(all, Column{t, c})
			}
		}
	} else {
		var rows []struct {
			Table  string `bun:"table_name"`
			Column string `bun:"column_name"`
		}
		if err := d.NewRaw("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()").Scan(ctx, &rows); err != nil {
			return nil, fmt.Errorf("erasure: list columns: %w", err)
		}
		for _, r := range rows {
			all = append(all, Column{r.Table, r.Column})
		}
	}
	var out []Column
	for _, c := range all {
		if Personal(c.Column) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// Uncovered returns the columns of cols that no eraser of r covers and that are not Exempt:
// a personal-data store nobody erases. An empty answer is the coverage check passing.
func (r *Registry) Uncovered(cols []Column) []Column {
	covered := map[Column]bool{}
	for _, e := range r.Erasers() {
		for _, c := range e.Covers() {
			covered[c] = true
		}
	}
	var out []Column
	for _, c := range cols {
		if _, ok := Exempt[c]; !ok && !covered[c] {
			out = append(out, c)
		}
	}
	return out
}
