package models

import (
	"time"

	"github.com/uptrace/bun"
)

// AgentRun is a run's budget (CTX-3): the space, the caller that began it (Owner: the agent
// source of an agent key, the key id of a person key) and the caller's RunID; BudgetTokens
// as the first call set it; UsedTokens delivered plus reserved by calls in flight;
// LastReserved what the latest reservation took; the run ends at ExpiresAt.
type AgentRun struct {
	bun.BaseModel `bun:"table:agent_runs,alias:r"`

	SpaceID      string    `bun:"space_id,pk"`
	Owner        string    `bun:"owner,pk"`
	RunID        string    `bun:"run_id,pk"`
	BudgetTokens int       `bun:"budget_tokens"`
	UsedTokens   int       `bun:"used_tokens"`
	LastReserved int       `bun:"last_reserved"`
	CreatedAt    time.Time `bun:"created_at"`
	ExpiresAt    time.Time `bun:"expires_at"`
}
