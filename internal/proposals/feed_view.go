package proposals

import "github.com/agentmemory/agentmemory/models"

// FeedView is proposal r as the API shows it (Proposal), for the export feed (issue 33).
func FeedView(r models.NoteProposal) Proposal { return toProposal(r) }
