package state

import (
	"context"
	"encoding/json"

	"github.com/agentmemory/agentmemory/internal/spaces"
)

// CheckFieldValue checks raw against the declared type of field name as a working-memory
// write does (null is always a value): fault.Invalid "invalid_field_value" naming
// body.<name> otherwise. Boards (internal/boards) apply the same field rules.
func CheckFieldValue(name string, f spaces.Field, raw json.RawMessage) error {
	return checkValue(name, f, raw)
}

// MaskValue masks personal data in every string inside raw by the space's masking rules, as
// a working-memory write masks a pii field; raw itself when nothing changed.
func (s *Service) MaskValue(ctx context.Context, spaceID string, raw json.RawMessage) (json.RawMessage, error) {
	return s.maskValue(ctx, spaceID, raw)
}
