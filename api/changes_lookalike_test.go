package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/models"
)

// lookAlikeNames are spellings of "Alice" by class (issue 27, "Found by the attacker": each
// of them approved its own holder's change before), and whether POST /v1/keys mints a key
// under it. The classes also have a unit table (internal/auth TestSamePersonNameClasses).
var lookAlikeNames = []struct {
	class, name string
	mintable    bool
}{
	{"other case", "ALICE", true},
	{"Cyrillic а (U+0430)", "\u0430lice", true},
	{"capital I for l", "AIice", true},
	{"combining mark (U+0323)", "Alice\u0323", true},
	{"small capital ᴀ (U+1D00)", "\u1d00lice", true},
	{"NFD accent", "A\u0301lice", true},
	{"full-width", "\uff21lice", true},
	{"trailing braille blank (U+2800)", "Alice\u2800", false},
	{"object replacement (U+FFFC)", "Alice\ufffc", false},
	{"control character (U+0001)", "Al\u0001ice", false},
	{"zero-width space (U+200B)", "Al\u200bice", false},
	{"right-to-left override (U+202E)", "Alice\u202e", false},
	{"private use (U+E000)", "Alice\ue000", false},
	{"unassigned (U+0378)", "Alice\u0378", false},
	{"Hangul filler (U+3164)", "Alice\u3164", false},
}

// TestChangeLookAlikeNamesAreTheProposer: a change proposed by "Alice" is refused (403
// change_own_proposal) to a security key under every look-alike spelling, whether minted
// through the API (where the spelling is mintable) or stored before names were checked (a row
// written directly, as an old database holds it); a look-alike that is not mintable is refused
// at mint with 400 invalid_member naming "name" and no key; another person approves.
func TestChangeLookAlikeNamesAreTheProposer(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		g := newGovSpace(e)
		alice := g.person("Alice", "security")
		other := g.person("Rui", "security")
		keys := map[string]string{}
		for _, c := range lookAlikeNames {
			if c.mintable {
				keys[c.class] = g.person(c.name, "security")
				continue
			}
			before := len(spaceReceipts(t, e, g.admin))
			m := requireError(t, e.Do("POST", "/v1/keys", g.admin, map[string]any{"kind": "person", "name": c.name, "roles": []string{"security"}}),
				http.StatusBadRequest, "invalid_member")
			require.Equal(t, "name", m["member"], c.class)
			require.Len(t, spaceReceipts(t, e, g.admin), before, "%s: a refused mint appends nothing", c.class)
			keys[c.class] = storedPersonKey(t, e, g.id, c.name)
		}

		ch := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/features/changes", alice,
			map[string]any{"agent_state": map[string]any{"enabled": true}}))
		approve := "/v1/documents/features/changes/" + ch.ID + "/approve"
		for _, c := range lookAlikeNames {
			requireError(t, e.Do("POST", approve, keys[c.class], nil), http.StatusForbidden, "change_own_proposal")
		}
		v, _ := docVersion(t, e, g.admin, "features")
		require.Equal(t, "0", v, "refused approvals change nothing")
		applied := change(t, e.MustDo(http.StatusOK, "POST", approve, other, nil))
		require.Equal(t, "applied", applied.Status)
	})
}

// storedPersonKey writes a security person key named name into space as a database from before
// the name rules holds it (no validation), a second before now so it predates the change.
func storedPersonKey(t *testing.T, e *apptest.Env, spaceID, name string) string {
	t.Helper()
	key, hash := auth.NewKey()
	row := &models.APIKey{
		ID: auth.NewID("key"), SpaceID: spaceID, Hash: hash, Kind: auth.KindPerson, Name: name,
		Scopes: []string{}, Roles: []string{auth.RoleSecurity}, CreatedBy: "cli",
		CreatedAt: time.Now().UTC().Add(-time.Second),
	}
	_, err := e.DB.NewInsert().Model(row).Exec(context.Background())
	require.NoError(t, err)
	return key
}
