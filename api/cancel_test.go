package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/logs"
	"github.com/agentmemory/agentmemory/internal/logs/logstest"
	"github.com/agentmemory/agentmemory/internal/metrics"
	"github.com/agentmemory/agentmemory/models"
)

// losingMasker makes every write of a pii field lose its race (it bumps the stored version
// between the write's read and its compare-and-swap) and cancels the request after a few
// attempts, as a caller that gives up while the write retries.
type losingMasker struct {
	db     *bun.DB
	calls  atomic.Int32
	cancel context.CancelFunc
}

func (m *losingMasker) MaskText(_ context.Context, _, text string) (string, error) {
	if _, err := m.db.NewUpdate().Model((*models.AgentState)(nil)).Set("version = version + 1").Where("1 = 1").Exec(context.Background()); err != nil {
		return "", err
	}
	if m.calls.Add(1) == 3 {
		m.cancel()
	}
	return text, nil
}

// TestCancelledWriteIsAnsweredAsSuch (issue 13 §5): a caller that goes away while its write
// retries gets 499 request_canceled, not 500, and the log holds no internal error.
func TestCancelledWriteIsAnsweredAsSuch(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sink := &logstest.Buffer{}
		e = apptest.New(t, e.Engine, func(d *api.Deps) { d.Logger = logs.New("json", "debug", sink); d.Metrics = metrics.New() })
		key := stateSetup(e)
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, stateWriteBody("c-1", nil, map[string]any{"step": "cart"}))

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		m := &losingMasker{db: e.DB, cancel: cancel}
		e.Deps.State.Masker = m
		body, err := json.Marshal(stateWriteBody("c-1", nil, map[string]any{"cart_note": "gift wrap"}))
		require.NoError(t, err)
		req := httptest.NewRequest("PUT", "/v1/agent-state", bytes.NewReader(body)).WithContext(ctx)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.Server.ServeHTTP(rec, req)

		require.Equal(t, api.StatusClientClosedRequest, rec.Code, "got %d, want 499: %s", rec.Code, rec.Body)
		require.Contains(t, rec.Body.String(), `"request_canceled"`)
		require.Equal(t, int32(3), m.calls.Load(), "the write stopped at its first attempt after the cancel")
		require.NotContains(t, sink.String(), "internal error")
		require.True(t, strings.Contains(sink.String(), `"status":499`), "the access log records 499: %s", sink.String())
		require.Contains(t, sink.String(), `"space_id":"`+e.SpaceID+`"`, "the access line names the space (QT-2)")
	})
}
