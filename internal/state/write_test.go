package state_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
)

// racingMasker loses every write's race: each time a pii field is masked (between the
// write's read and its compare-and-swap) it bumps the stored state's version, as a
// concurrent writer would. After cancelAfter calls (0: never) it calls cancel.
type racingMasker struct {
	db          *bun.DB
	calls       atomic.Int32
	cancelAfter int32
	cancel      context.CancelFunc
}

func (m *racingMasker) MaskText(ctx context.Context, _, text string) (string, error) {
	n := m.calls.Add(1)
	if _, err := m.db.NewUpdate().Model((*models.AgentState)(nil)).Set("version = version + 1").Where("1 = 1").Exec(context.Background()); err != nil {
		return "", err
	}
	if m.cancelAfter > 0 && n == m.cancelAfter {
		m.cancel()
	}
	return text, nil
}

// newService returns a state service over d with one space whose agent "bot" has a
// conversation-scoped schema with a pii field, the masker m, and an integration principal.
func newService(t *testing.T, d *bun.DB, m state.Masker) (*state.Service, auth.Principal) {
	t.Helper()
	ctx := context.Background()
	spaceID, _, err := spaces.CreateWith(ctx, d, "test", time.Now(), spaces.CreateOptions{DirectPut: true})
	require.NoError(t, err)
	p := auth.Principal{SpaceID: spaceID, KeyID: "key_test", Kind: auth.KindPerson, Name: "tester",
		Roles: []string{auth.RoleSecurity, auth.RoleAdmin, auth.RoleIntegration}}
	docs := spaces.Documents{DB: d}
	_, _, err = docs.Put(ctx, d, p, spaces.DocFeatures, []byte(`{"agent_state": {"enabled": true}}`), time.Now())
	require.NoError(t, err)
	_, _, err = docs.Put(ctx, d, p, spaces.DocObjectTypes, []byte(`{"types": [{"type": "bot", "ownership": "agent",
		"fields": {"step": {"type": "string"}, "note": {"type": "text", "pii": true}},
		"agent_state": {"scope": "conversation", "max_bytes": 4096, "write": "both"}}]}`), time.Now())
	require.NoError(t, err)
	return &state.Service{DB: d, Docs: docs, Hasher: keyed.New([]byte("state-test-secret-0123456789abcdef")), Masker: m, Now: time.Now}, p
}

func write(body string) state.WriteRequest {
	return state.WriteRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-1"}, Agent: "bot", Body: json.RawMessage(body)}
}

// TestWriteStopsWhenItsCallerCancels (issue 13 §5): a write that keeps losing its race stops
// at the first attempt after its context ends and returns context.Canceled, instead of
// retrying up to its limit and answering an internal error.
func TestWriteStopsWhenItsCallerCancels(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		m := &racingMasker{db: d, cancelAfter: 5, cancel: cancel}
		s, p := newService(t, d, m)
		_, err := s.Write(context.Background(), p, "", write(`{"step": "a"}`)) // the row to race on
		require.NoError(t, err)

		_, err = s.Write(ctx, p, "", write(`{"note": "x"}`))
		require.ErrorIs(t, err, context.Canceled, "got %v, want context.Canceled", err)
		require.Nil(t, fault.As(err), "a cancelled write is not a domain fault")
		require.Equal(t, int32(5), m.calls.Load(), "attempts after the cancel: got %d calls, want 5", m.calls.Load())

		got, err := s.Read(context.Background(), p, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-1"}, Agent: "bot"})
		require.NoError(t, err)
		require.JSONEq(t, `{"step": "a"}`, string(got.Body), "nothing of the cancelled write is stored")
	})
}

// TestWriteGivesUpBusy: without a cancel, a write that loses every race answers
// agent_state_busy (503) after its attempts, never an internal error.
func TestWriteGivesUpBusy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		m := &racingMasker{db: d}
		s, p := newService(t, d, m)
		_, err := s.Write(context.Background(), p, "", write(`{"step": "a"}`))
		require.NoError(t, err)
		_, err = s.Write(context.Background(), p, "", write(`{"note": "x"}`))
		fe := fault.As(err)
		require.NotNil(t, fe, "got %v, want agent_state_busy", err)
		require.Equal(t, "agent_state_busy", fe.Code)
		require.Equal(t, fault.Unavailable, fe.Kind)
	})
}

// TestReadNeverWritten: a state never written reads as version 0 with an empty body (load's
// not-found is not an error).
func TestReadNeverWritten(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		s, p := newService(t, d, &racingMasker{db: d})
		got, err := s.Read(context.Background(), p, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "none"}, Agent: "bot"})
		require.NoError(t, err)
		require.Zero(t, got.Version)
		require.Equal(t, "{}", string(got.Body))
		require.Nil(t, got.UpdatedAt)
	})
}
