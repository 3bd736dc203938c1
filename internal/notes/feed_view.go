package notes

import "github.com/agentmemory/agentmemory/models"

// FeedView is note version r as the API shows it (Note), for the export feed (issue 33): the
// feed exports what the API would show, so a change of the stored shape (sealed content)
// changes it here, beside toNote.
func FeedView(r models.Note) Note { return toNote(r) }
