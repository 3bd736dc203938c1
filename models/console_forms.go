package models

import (
	"time"

	"github.com/uptrace/bun"
)

// ConsoleFormUse is a spent one-time Console form token (issue 27): ID is the hex SHA-256 of
// the token, SessionID the id of the session it was issued to.
type ConsoleFormUse struct {
	bun.BaseModel `bun:"table:console_form_uses"`

	ID        string    `bun:"id,pk"`
	SessionID string    `bun:"session_id"`
	UsedAt    time.Time `bun:"used_at"`
}
