package events

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// prepareEvents fills only empty ids and times (now, UTC, to the microsecond), encodes each
// event as stored, and refuses events of two spaces.
func TestPrepareEvents(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out, payloads, err := prepareEvents([]Event{
		{Type: "note.created", SpaceID: "sp_1", NoteID: "n1"},
		{ID: "evt_given", Type: "note.retired", SpaceID: "sp_1", OccurredAt: at},
	}, now)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out[0].ID, "evt_"), out[0].ID)
	require.Equal(t, now.UTC().Truncate(time.Microsecond), out[0].OccurredAt)
	require.Equal(t, Event{ID: "evt_given", Type: "note.retired", SpaceID: "sp_1", OccurredAt: at}, out[1])
	for i, p := range payloads {
		var back Event
		require.NoError(t, json.Unmarshal([]byte(p), &back))
		require.Equal(t, out[i], back)
	}

	_, _, err = prepareEvents([]Event{{SpaceID: "sp_1"}, {SpaceID: "sp_2"}}, now)
	require.ErrorContains(t, err, "events of spaces sp_1 and sp_2")
}
