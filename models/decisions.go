package models

import (
	"time"

	"github.com/uptrace/bun"
)

// ProposalDecision is a reviewer's decision on a distilled proposal (AM-9), stored by the
// API before it signals the waiting DistillWorkflow with the decision's id only. Decision is
// "approve" or "reject"; Patch is the JSON of the approval's edits ("" for none); Reason the
// rejection's reason. Outcome is "" until the workflow's activity applied it, then
// "approved", "rejected" or "refused" (RefusedCode, and RefusedKinds a JSON array of
// personal-data kinds, say why; the proposal then stays pending).
type ProposalDecision struct {
	bun.BaseModel `bun:"table:proposal_decisions"`

	ID           string    `bun:"id,pk"`
	SpaceID      string    `bun:"space_id"`
	ProposalID   string    `bun:"proposal_id"`
	Decision     string    `bun:"decision"`
	Patch        string    `bun:"patch"`
	Reason       string    `bun:"reason"`
	ByKeyID      string    `bun:"by_key_id"`
	Outcome      string    `bun:"outcome"`
	RefusedCode  string    `bun:"refused_code"`
	RefusedKinds string    `bun:"refused_kinds"`
	CreatedAt    time.Time `bun:"created_at"`
	UpdatedAt    time.Time `bun:"updated_at"`
}
