package changes

import "github.com/agentmemory/agentmemory/models"

// FeedView is change request r as the API shows it (Change), for the export feed (issue 33).
// A pending change shows as pending: whether it went stale depends on the document's version
// at reading, which the feed's documents table carries.
func FeedView(r models.DocumentChange) Change { return changeOf(r, r.BaseVersion) }
