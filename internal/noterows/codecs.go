package noterows

import "encoding/json"

// Evidence names where a note was learned: exactly one of a conversation or a task id (the
// id only, never content). It is notes.Evidence (an alias there).
type Evidence struct {
	ConversationID string `json:"conversation_id,omitempty"`
	TaskID         string `json:"task_id,omitempty"`
}

// EvidenceOf is the evidence stored as kind ("conversation", "task" or "") and id; nil for
// none (any other kind).
func EvidenceOf(kind, id string) *Evidence {
	switch kind {
	case "conversation":
		return &Evidence{ConversationID: id}
	case "task":
		return &Evidence{TaskID: id}
	}
	return nil
}

// EvidenceColumns is how evidence e is stored: its kind ("conversation", "task"; "" for nil)
// and id.
func EvidenceColumns(e *Evidence) (kind, id string) {
	switch {
	case e == nil:
		return "", ""
	case e.ConversationID != "":
		return "conversation", e.ConversationID
	default:
		return "task", e.TaskID
	}
}

// DecodeTags reads a stored JSON array of tags or kinds ([] for none or a bad value).
func DecodeTags(s string) []string {
	var tags []string
	_ = json.Unmarshal([]byte(s), &tags) // written by EncodeTags as a JSON array; an unreadable one reads as no tags
	if tags == nil {
		tags = []string{}
	}
	return tags
}

// EncodeTags is how tags and kinds lists are stored: a JSON array ("[]" for none).
func EncodeTags(tags []string) string {
	if tags == nil {
		tags = []string{}
	}
	b, _ := json.Marshal(tags) // a []string always marshals
	return string(b)
}
