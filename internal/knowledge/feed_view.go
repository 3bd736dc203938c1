package knowledge

import "github.com/agentmemory/agentmemory/models"

// FeedDocument is document r as the API shows it (Document: metadata, never its text), for the
// export feed (issue 33).
func FeedDocument(r models.KnowledgeDocument) Document { return toDocument(r) }
