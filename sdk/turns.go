package sdk

import "context"

// ReadTurnsRequest asks for a page of a conversation's masked turns (POST /v1/turns/read;
// the key needs scope context, or a person key role integration): ConversationID or TaskID
// (exactly one), After (the NextAfter of the previous page; "" from the oldest) and Limit
// (1..500; 0: the service's 100).
type ReadTurnsRequest struct {
	ConversationID string `json:"conversation_id,omitempty"`
	TaskID         string `json:"task_id,omitempty"`
	After          string `json:"after,omitempty"`
	Limit          int    `json:"limit,omitempty"`
}

// Turn is a stored turn: Text is masked (personal data replaced by typed placeholders such
// as <email>); KeyID and AgentVersion are its provenance.
type Turn struct {
	ID             string `json:"id"`
	ConversationID string `json:"conversation_id,omitempty"`
	TaskID         string `json:"task_id,omitempty"`
	Speaker        string `json:"speaker"`
	Text           string `json:"text"`
	// At is RFC 3339 in UTC.
	At           string `json:"at"`
	KeyID        string `json:"key_id"`
	AgentVersion string `json:"agent_version"`
}

// TurnsPage is one page of ReadTurns, oldest first; NextAfter is the After of the next page
// ("" when this page is the last).
type TurnsPage struct {
	Turns     []Turn `json:"turns"`
	NextAfter string `json:"next_after"`
}

// ReadTurns reads a page of a conversation's (or task's) masked turns. Each read leaves a
// receipt on the service naming the conversation by its keyed hash. A conversation that was
// erased answers as one that never existed: no turns. Errors are *Error: 400
// invalid_member (the member in the message: conversation_id, after, limit), 403
// scope_required or role_required.
func (c *Client) ReadTurns(ctx context.Context, req ReadTurnsRequest) (TurnsPage, error) {
	var out TurnsPage
	if _, _, err := c.do(ctx, "POST", "/v1/turns/read", req, &out); err != nil {
		return TurnsPage{}, err
	}
	if out.Turns == nil {
		out.Turns = []Turn{}
	}
	return out, nil
}
