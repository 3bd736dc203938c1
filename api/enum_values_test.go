package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/models"
)

// enumType is the shop-bot type whose step field is declared by step.
func enumType(step any) map[string]any {
	return typesDoc(map[string]any{"type": "shop-bot", "ownership": "agent",
		"fields":      map[string]any{"step": step, "offer": map[string]any{"type": "string"}},
		"agent_state": map[string]any{"scope": "conversation"}})
}

// An enum field declares its values (issue 27): without them, or with empty, repeated, too
// long or too many values, the object-types document is 400 invalid_document naming
// types[0].fields.step.values and nothing changes; declared, a value outside them is 400
// invalid_field_value and nothing is written.
func TestEnumDeclaresValues(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		good := enumType(map[string]any{"type": "enum", "values": []string{"greet", "sizes"}})
		e.PutDocument("object-types", good)
		before := e.MustDo(http.StatusOK, http.MethodGet, "/v1/documents/object-types", e.AdminKey, nil)

		many := make([]string, 257)
		for i := range many {
			many[i] = "v" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		}
		bad := []struct {
			name string
			step any
		}{
			{"no values", map[string]any{"type": "enum"}},
			{"empty values", map[string]any{"type": "enum", "values": []string{}}},
			{"null values", map[string]any{"type": "enum", "values": nil}},
			{"an empty value", map[string]any{"type": "enum", "values": []string{"greet", ""}}},
			{"a repeated value", map[string]any{"type": "enum", "values": []string{"greet", "greet"}}},
			{"a value too long", map[string]any{"type": "enum", "values": []string{strings.Repeat("é", 129)}}},
			{"too many values", map[string]any{"type": "enum", "values": many}},
		}
		for _, tc := range bad {
			r := e.Do(http.MethodPut, "/v1/documents/object-types", e.AdminKey, enumType(tc.step))
			requireError(t, r, http.StatusBadRequest, "invalid_document")
			require.Equal(t, "types[0].fields.step.values", errMember(t, r), tc.name)
		}
		// values on another type stays refused.
		r := e.Do(http.MethodPut, "/v1/documents/object-types", e.AdminKey, enumType(map[string]any{"type": "string", "values": []string{"a"}}))
		requireError(t, r, http.StatusBadRequest, "invalid_document")
		require.Equal(t, "types[0].fields.step.values", errMember(t, r))
		after := e.MustDo(http.StatusOK, http.MethodGet, "/v1/documents/object-types", e.AdminKey, nil)
		require.Equal(t, string(before.Body), string(after.Body), "a refused document changed the stored one")
		require.Equal(t, before.Header.Get("X-Document-Version"), after.Header.Get("X-Document-Version"))

		// The declared values are enforced.
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		require.Equal(t, int64(1), mustStore(e, key, map[string]any{"scope": conv("c-1"), "body": map[string]any{"step": "sizes"}}))
		r = write(e, key, map[string]any{"scope": conv("c-1"), "body": map[string]any{"step": "checkout"}})
		requireError(t, r, http.StatusBadRequest, "invalid_field_value")
		require.Equal(t, "body.step", errMember(t, r))
		require.Equal(t, `{"step":"sizes"}`, read(e, key, conv("c-1"), "").Raw)
	})
}

// A proposed change of object-types is validated as a PUT: an enum without values is refused
// when proposed, and nothing is stored.
func TestEnumValuesInChangeRequests(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		_, admin := e.NewSpace("governed", false)
		r := e.Do(http.MethodPost, "/v1/documents/object-types/changes", admin, enumType(map[string]any{"type": "enum"}))
		requireError(t, r, http.StatusBadRequest, "invalid_document")
		require.Equal(t, "types[0].fields.step.values", errMember(t, r))
		n, err := e.DB.NewSelect().Model((*models.DocumentChange)(nil)).Count(context.Background())
		require.NoError(t, err)
		require.Zero(t, n, "a refused proposal was stored")
		e.MustDo(http.StatusCreated, http.MethodPost, "/v1/documents/object-types/changes", admin,
			enumType(map[string]any{"type": "enum", "values": []string{"greet"}}))
	})
}

// A document stored before the rule (an enum without values) is still read as it is: its enum
// accepts any string, until the document is written again, when the rule applies.
func TestEnumWithoutValuesStoredBeforeTheRule(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		legacy := `{"types":[{"type":"shop-bot","ownership":"agent","fields":{"step":{"type":"enum"}},"agent_state":{"scope":"conversation"}}]}`
		_, err := e.DB.NewInsert().Model(&models.Document{SpaceID: e.SpaceID, Name: "object-types", Body: legacy,
			Version: 1, UpdatedBy: "legacy", UpdatedAt: time.Now().UTC()}).Exec(context.Background())
		require.NoError(t, err)
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		mustStore(e, key, map[string]any{"scope": conv("c-1"), "body": map[string]any{"step": "anything at all"}})
		require.Equal(t, `{"step":"anything at all"}`, read(e, key, conv("c-1"), "").Raw)
		r := e.Do(http.MethodPut, "/v1/documents/object-types", e.AdminKey, legacy)
		requireError(t, r, http.StatusBadRequest, "invalid_document")
		require.Equal(t, "types[0].fields.step.values", errMember(t, r))
	})
}
