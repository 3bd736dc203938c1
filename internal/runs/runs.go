// Package runs keeps a run's budget (CTX-3, memory-and-state.en.md: "reading from memory draws
// on the run's budget"). A run is named by its caller ({id, budget_tokens}); its first call
// sets the budget, and every memory read of the run (block, note search, knowledge retrieval,
// context call, and the MCP tools that read) draws the tokens it delivers (cl100k_base, as
// notes.CountTokens counts them) from it.
//
// A call draws in three steps, atomic under concurrency (any number of replicas, parallel calls
// of one run): Reserve takes min(what the call would deliver, what is left) in one conditional
// UPDATE; the call builds its answer within what it reserved; Settle gives back what it did not
// deliver. The stored used_tokens counts delivered tokens plus reservations in flight, so the
// sum of what calls deliver never passes the budget. A process that dies between Reserve and
// Settle leaves its reservation counted: the run is under-used, never overspent.
package runs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Limits of a run (CTX-3).
const (
	MaxIDLen  = 200
	MaxBudget = 1000000
)

// The headers that name a run on GET calls (ids travel outside URLs).
const (
	HeaderID     = "Agent-Run-Id"
	HeaderBudget = "Agent-Run-Budget"
)

// Run names the run a call belongs to: the member run of a POST body or an MCP read tool's
// arguments ({"id", "budget_tokens"}), or the headers Agent-Run-Id and Agent-Run-Budget of a
// GET. ID is 1..200 printable characters; BudgetTokens 1..1000000, required on the run's first
// call, optional later (a later value different from the stored budget is 409
// run_budget_mismatch).
type Run struct {
	ID           string `json:"id"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`

	budgetMember string // the member errors about the budget name ("" : run.budget_tokens)
}

// Validate checks r (nil: no run), naming the member as "run.id" or "run.budget_tokens" (the
// headers' names for a run read from them).
func (r *Run) Validate() error {
	if r != nil && r.budgetMember == HeaderBudget {
		return r.check(HeaderID, HeaderBudget)
	}
	return r.check("run.id", "run.budget_tokens")
}

// check checks r naming idMember and budgetMember in its errors (fault.Invalid
// invalid_member).
func (r *Run) check(idMember, budgetMember string) error {
	if r == nil {
		return nil
	}
	if r.ID == "" || len(r.ID) > MaxIDLen || strings.IndexFunc(r.ID, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
		return invalid(idMember, "a run id is 1 to %d printable characters", MaxIDLen)
	}
	if r.BudgetTokens < 0 || r.BudgetTokens > MaxBudget {
		return invalid(budgetMember, "a run's budget_tokens is from 1 to %d", MaxBudget)
	}
	return nil
}

// budgetName is the member that names r's budget in errors.
func (r Run) budgetName() string {
	if r.budgetMember != "" {
		return r.budgetMember
	}
	return "run.budget_tokens"
}

// FromHeaders is the run named by the headers Agent-Run-Id and Agent-Run-Budget of a GET (nil
// when both are absent). Errors are fault.Invalid invalid_member naming the header: a budget
// without an id, an id outside 1..200 printable characters, a budget that is not an integer
// from 1 to 1000000.
func FromHeaders(id, budget string) (*Run, error) {
	if id == "" && budget == "" {
		return nil, nil
	}
	if id == "" {
		return nil, invalid(HeaderID, "%s names the run that %s belongs to", HeaderID, HeaderBudget)
	}
	r := &Run{ID: id, budgetMember: HeaderBudget}
	if budget != "" {
		n, err := strconv.Atoi(budget)
		if err != nil || n < 1 {
			return nil, invalid(HeaderBudget, "a run's budget is an integer from 1 to %d", MaxBudget)
		}
		r.BudgetTokens = n
	}
	return r, r.check(HeaderID, HeaderBudget)
}

// Report is the member run of an answer in a run: the budget, what the run has used (tokens
// delivered, plus those reserved by calls still in flight), what remains, and Cut: this call
// delivered less than it would have without the run (whole notes or chunks were left out to
// fit).
type Report struct {
	ID              string `json:"id"`
	BudgetTokens    int    `json:"budget_tokens"`
	UsedTokens      int    `json:"used_tokens"`
	RemainingTokens int    `json:"remaining_tokens"`
	Cut             bool   `json:"cut"`
}

// Store keeps runs in the table agent_runs. Docs gives a space's run lifetime
// (spaces.Features.RunTTL).
type Store struct {
	DB   *bun.DB
	Docs spaces.Documents
	Now  func() time.Time
}

// Owner is who a run belongs to within its space: the agent source of an agent key (every key
// of that agent shares its runs), the key id of a person key. Another caller naming the same
// run id has its own run.
func Owner(p auth.Principal) string {
	if p.IsAgent() {
		return "agent:" + p.Agent
	}
	return "key:" + p.KeyID
}

// Draw is one call's draw on a run. Its methods are not safe for concurrent use; parallel
// calls of one run each have their own Draw.
type Draw struct {
	store    *Store
	spaceID  string
	owner    string
	run      Run
	budget   int // the stored budget, known after Reserve
	reserved int
}

// Begin returns the draw of one call of p in run (nil, nil without a run), after checking
// run as Validate does. It touches no row: Reserve does.
func (s *Store) Begin(p auth.Principal, run *Run) (*Draw, error) {
	if run == nil {
		return nil, nil
	}
	if err := run.Validate(); err != nil {
		return nil, err
	}
	return &Draw{store: s, spaceID: p.SpaceID, owner: Owner(p), run: *run}, nil
}

// ID is the run's id (for receipts).
func (d *Draw) ID() string { return d.run.ID }

// Reserved is what the last Reserve took.
func (d *Draw) Reserved() int { return d.reserved }

// Reserve finds or begins the run and reserves min(want, what is left) tokens in one
// conditional UPDATE, returning what it reserved (0: nothing left, or want is 0). The run's
// first call (no live row: never begun, or expired) needs budget_tokens: without it the error
// is fault.Invalid run_budget_required (member run.budget_tokens); with a budget different
// from the stored one it is fault.Conflict run_budget_mismatch. On an error nothing is
// reserved.
func (d *Draw) Reserve(ctx context.Context, want int) (int, error) {
	if err := d.ensure(ctx); err != nil {
		return 0, err
	}
	d.reserved = 0
	if want <= 0 {
		return 0, nil
	}
	var got []int
	err := d.store.DB.NewRaw(`UPDATE agent_runs
SET last_reserved = CASE WHEN budget_tokens - used_tokens < ? THEN budget_tokens - used_tokens ELSE ? END,
    used_tokens = used_tokens + CASE WHEN budget_tokens - used_tokens < ? THEN budget_tokens - used_tokens ELSE ? END
WHERE space_id = ? AND owner = ? AND run_id = ? AND expires_at > ? AND used_tokens < budget_tokens
RETURNING last_reserved`, want, want, want, want, d.spaceID, d.owner, d.run.ID, d.store.now()).Scan(ctx, &got)
	if err != nil {
		return 0, fmt.Errorf("runs: reserve: %w", err)
	}
	if len(got) == 1 {
		d.reserved = got[0]
	}
	return d.reserved, nil
}

// ensure finds the live run or begins it (INSERT ... ON CONFLICT DO NOTHING, so parallel first
// calls begin it once), replacing an expired row of the same id. Beginning a run deletes the
// space's expired runs (the lazy sweep).
func (d *Draw) ensure(ctx context.Context) error {
	for range 2 { // a second round only after deleting an expired row of the same id
		now := d.store.now()
		if d.run.BudgetTokens > 0 {
			created, err := d.insert(ctx, now)
			if err != nil {
				return err
			}
			if created {
				d.budget = d.run.BudgetTokens
				return d.sweep(ctx, now)
			}
		}
		var row models.AgentRun
		err := d.store.DB.NewSelect().Model(&row).
			Where("space_id = ? AND owner = ? AND run_id = ?", d.spaceID, d.owner, d.run.ID).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && !row.ExpiresAt.After(now)) {
			if d.run.BudgetTokens == 0 {
				return fault.New(fault.Invalid, "run_budget_required", "this run is unknown or expired: its first call names its budget").
					With("member", d.run.budgetName())
			}
			if err == nil {
				if _, err := d.store.DB.NewDelete().Model((*models.AgentRun)(nil)).
					Where("space_id = ? AND owner = ? AND run_id = ? AND expires_at <= ?", d.spaceID, d.owner, d.run.ID, now).Exec(ctx); err != nil {
					return fmt.Errorf("runs: delete expired: %w", err)
				}
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("runs: load: %w", err)
		}
		if d.run.BudgetTokens > 0 && d.run.BudgetTokens != row.BudgetTokens {
			return fault.New(fault.Conflict, "run_budget_mismatch", "this run began with a budget of %d tokens: name the same budget or leave it out", row.BudgetTokens).
				With("member", d.run.budgetName())
		}
		d.budget = row.BudgetTokens
		return nil
	}
	return fault.New(fault.Conflict, "run_busy", "the run was replaced while this call began it: retry")
}

// insert begins the run at now unless a row of its id exists; it reports whether it did.
func (d *Draw) insert(ctx context.Context, now time.Time) (bool, error) {
	f, err := d.store.Docs.Features(ctx, d.spaceID)
	if err != nil {
		return false, err
	}
	row := models.AgentRun{SpaceID: d.spaceID, Owner: d.owner, RunID: d.run.ID, BudgetTokens: d.run.BudgetTokens,
		CreatedAt: now, ExpiresAt: now.Add(f.RunTTL())}
	res, err := d.store.DB.NewInsert().Model(&row).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("runs: begin: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("runs: begin: %w", err)
	}
	return n == 1, nil
}

// sweep deletes the space's runs expired at now.
func (d *Draw) sweep(ctx context.Context, now time.Time) error {
	if _, err := d.store.DB.NewDelete().Model((*models.AgentRun)(nil)).
		Where("space_id = ? AND expires_at <= ?", d.spaceID, now).Exec(ctx); err != nil {
		return fmt.Errorf("runs: sweep: %w", err)
	}
	return nil
}

// Settle ends the call's draw: it gives back what was reserved and not delivered (reserved
// minus used, used clamped to 0..reserved) and returns the run's figures after it, Cut as
// given. A run deleted meanwhile (expired and swept) reports nothing remaining.
func (d *Draw) Settle(ctx context.Context, used int, cut bool) (Report, error) {
	used = max(0, min(used, d.reserved))
	back := d.reserved - used
	d.reserved = used
	var rows []models.AgentRun
	var err error
	if back > 0 {
		err = d.store.DB.NewRaw(`UPDATE agent_runs SET used_tokens = used_tokens - ?
WHERE space_id = ? AND owner = ? AND run_id = ? RETURNING budget_tokens, used_tokens`, back, d.spaceID, d.owner, d.run.ID).Scan(ctx, &rows)
	} else {
		err = d.store.DB.NewSelect().Model(&rows).Column("budget_tokens", "used_tokens").
			Where("space_id = ? AND owner = ? AND run_id = ?", d.spaceID, d.owner, d.run.ID).Scan(ctx)
	}
	if err != nil {
		return Report{}, fmt.Errorf("runs: settle: %w", err)
	}
	r := Report{ID: d.run.ID, BudgetTokens: d.budget, UsedTokens: d.budget, Cut: cut}
	if len(rows) == 1 {
		r.BudgetTokens, r.UsedTokens = rows[0].BudgetTokens, rows[0].UsedTokens
		r.RemainingTokens = max(0, r.BudgetTokens-r.UsedTokens)
	}
	return r, nil
}

// Abandon gives back everything reserved, for a call that ends in an error. It runs even when
// ctx is cancelled; its own failure leaves the reservation counted (the run under-used, never
// overspent), so the caller's error is the one to report.
func (d *Draw) Abandon(ctx context.Context) {
	if d == nil || d.reserved == 0 {
		return
	}
	// Dropping the error is safe: a reservation not given back only leaves the run under-used.
	_, _ = d.Settle(context.WithoutCancel(ctx), 0, false)
}

// Detail adds the run's receipt fields to detail: run_id and run_tokens, the tokens this call
// drew. A nil draw adds nothing.
func (d *Draw) Detail(detail map[string]any, drawn int) {
	if d == nil {
		return
	}
	detail["run_id"] = d.run.ID
	detail["run_tokens"] = drawn
}

func (s *Store) now() time.Time {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return now().UTC().Truncate(time.Microsecond)
}

func invalid(member, format string, args ...any) error {
	return fault.New(fault.Invalid, "invalid_member", format, args...).With("member", member)
}
