package sdktest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/sdk"
)

// statuses is an http.RoundTripper that records the status of every answer the server sent.
type statuses struct {
	mu   sync.Mutex
	got  []int
	next http.RoundTripper
}

func (s *statuses) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	if err == nil {
		s.mu.Lock()
		s.got = append(s.got, resp.StatusCode)
		s.mu.Unlock()
	}
	return resp, err
}

func (s *statuses) last() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[len(s.got)-1]
}

// notesClient turns agent memory on (with extra settings) and returns an SDK client for a
// fresh agent key with read and write scopes, over a real HTTP server, and its recorder.
func notesClient(t *testing.T, e *apptest.Env, extra map[string]any) (*sdk.Client, *statuses) {
	t.Helper()
	am := map[string]any{"enabled": true}
	for k, v := range extra {
		am[k] = v
	}
	e.PutDocument("features", map[string]any{"agent_memory": am})
	key := e.AgentKey("shop-bot", "acme-ai", "agent_memory", "agent_memory:write")
	srv := startServer(t, e.Deps)
	rec := &statuses{next: http.DefaultTransport}
	c, err := sdk.New(sdk.Options{BaseURL: srv.url(), Key: key, AgentVersion: "shop-bot/2.1", HTTPClient: &http.Client{Transport: rec}})
	require.NoError(t, err)
	return c, rec
}

func TestRememberNoteIdempotencyAndProposal(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c, _ := notesClient(t, e, nil)
		ctx := context.Background()
		n := sdk.Note{Kind: "tool_note", Title: "Stock API pagination", Body: "The stock API pages at 50 items; follow next_cursor.", Tags: []string{"stock"}}
		got, err := c.Remember(ctx, n, "idem-1")
		require.NoError(t, err)
		require.NotNil(t, got.Note)
		require.Empty(t, got.ProposalID)
		require.False(t, got.Replayed)
		require.NotEmpty(t, got.Note.ID)
		require.Equal(t, 1, got.Note.Version)
		require.Equal(t, "shop-bot", got.Note.SourceID)
		require.Equal(t, "acme-ai", got.Note.Vendor)
		require.Equal(t, "agent", got.Note.Origin)
		require.Equal(t, "active", got.Note.Status)
		require.Equal(t, "source", got.Note.Visibility)
		require.Equal(t, []string{"stock"}, got.Note.Tags)
		require.False(t, got.Note.CreatedAt.IsZero())

		again, err := c.Remember(ctx, n, "idem-1")
		require.NoError(t, err)
		require.True(t, again.Replayed)
		require.Equal(t, got.Note.ID, again.Note.ID)
		require.Empty(t, again.DuplicateOf, "a replay answers as before")

		// The same note without a key (other white space): the existing note, nothing stored.
		dupNote := n
		dupNote.Body = "The stock API  pages at 50 items;\nfollow next_cursor. "
		dup, err := c.Remember(ctx, dupNote, "")
		require.NoError(t, err)
		require.Equal(t, got.Note.ID, dup.DuplicateOf)
		require.Equal(t, got.Note.ID, dup.Note.ID)
		require.Equal(t, n.Body, dup.Note.Body)
		require.False(t, dup.Replayed)

		// human_only: the write becomes a proposal (202).
		e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true, "writes": "human_only"}})
		prop, err := c.Remember(ctx, sdk.Note{Kind: "pitfall", Title: "Kids sizes", Body: "Sizes run small in the kids line."}, "")
		require.NoError(t, err)
		require.Nil(t, prop.Note)
		require.NotEmpty(t, prop.ProposalID)
		r := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/proposals/"+prop.ProposalID, e.AdminKey, nil).JSON(t)
		require.Equal(t, "pending", r["status"])
	})
}

func TestRememberTypedErrors(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c, _ := notesClient(t, e, nil)
		ctx := context.Background()

		_, err := c.Remember(ctx, sdk.Note{Kind: "pitfall", Title: "Refund", Body: "Write to ana.souza@example.com about refunds."}, "")
		require.ErrorIs(t, err, sdk.ErrPersonalData)
		var ae *sdk.Error
		require.ErrorAs(t, err, &ae)
		require.Equal(t, http.StatusUnprocessableEntity, ae.Status)
		require.Equal(t, "personal_data_in_agent_memory", ae.Code)
		require.Equal(t, []string{"email"}, ae.Kinds)
		require.NotContains(t, ae.Error(), "ana.souza")

		_, err = c.Remember(ctx, sdk.Note{Kind: "nonsense", Title: "x", Body: "y"}, "")
		require.ErrorAs(t, err, &ae)
		require.Equal(t, http.StatusBadRequest, ae.Status)
		require.Equal(t, "invalid_member", ae.Code)

		for i := range 20 {
			_, err := c.Remember(ctx, sdk.Note{Kind: "procedure", Title: fmt.Sprintf("Step %d", i), Body: "Check stock before offering a size."}, "")
			require.NoError(t, err, "write %d", i)
		}
		_, err = c.Remember(ctx, sdk.Note{Kind: "procedure", Title: "One more", Body: "Check stock before offering a size."}, "")
		require.ErrorIs(t, err, sdk.ErrRateLimited)
		require.ErrorAs(t, err, &ae)
		require.Equal(t, "note_rate_limited", ae.Code)
		require.Greater(t, ae.RetryAfter, time.Duration(0))
		require.LessOrEqual(t, ae.RetryAfter, time.Hour)
	})
}

// downDetector is a model layer of the gate that never answers in time.
type downDetector struct{}

func (downDetector) DetectKinds(ctx context.Context, _ string) ([]string, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestRememberUnavailable(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := apptest.New(t, engine, func(d *api.Deps) {
				d.Notes.Detector = downDetector{}
				d.Notes.DetectorTimeout = 50 * time.Millisecond
			})
			c, _ := notesClient(t, e, nil)
			_, err := c.Remember(context.Background(), sdk.Note{Kind: "procedure", Title: "Sizes", Body: "Offer the size chart first."}, "")
			require.ErrorIs(t, err, sdk.ErrUnavailable)
			var ae *sdk.Error
			require.ErrorAs(t, err, &ae)
			require.Equal(t, "detector_unavailable", ae.Code)
			require.Greater(t, ae.RetryAfter, time.Duration(0))
		})
	}
}

// TestBlockCachedAndRevalidated: with agent_memory.cache_seconds 0 (Cache-Control no-cache)
// every block call is revalidated with If-None-Match. The freshness period (no request at all
// inside it, CTX-4) is tested against the real binary in sdk/cache_test.go.
func TestBlockCachedAndRevalidated(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c, rec := notesClient(t, e, map[string]any{"cache_seconds": 0})
		ctx := context.Background()
		first, err := c.Remember(ctx, sdk.Note{Kind: "procedure", Title: "Size chart first", Body: "Offer the size chart before the checkout.", Tags: []string{"order"}}, "")
		require.NoError(t, err)

		opt := sdk.BlockOptions{MaxTokens: 300, Tags: []string{"order"}}
		b1, err := c.Block(ctx, opt)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rec.last())
		require.True(t, b1.Enabled)
		require.Contains(t, b1.Text, "Size chart first")
		require.Equal(t, []string{first.Note.ID}, b1.NoteIDs)
		require.NotEmpty(t, b1.ETag)

		b2, err := c.Block(ctx, opt)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotModified, rec.last(), "the second fetch is revalidated with If-None-Match")
		require.False(t, b1.NotModified)
		require.True(t, b2.NotModified)
		b2.NotModified = false
		require.Equal(t, b1, b2)

		// Other options are another cache entry.
		_, err = c.Block(ctx, sdk.BlockOptions{MaxTokens: 500})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rec.last())

		// A new note changes the block: 200 with a new ETag, then 304 again.
		second, err := c.Remember(ctx, sdk.Note{Kind: "pitfall", Title: "Kids sizes", Body: "Sizes run small in the kids line.", Tags: []string{"order"}}, "")
		require.NoError(t, err)
		b3, err := c.Block(ctx, opt)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rec.last())
		require.NotEqual(t, b1.ETag, b3.ETag)
		require.ElementsMatch(t, []string{first.Note.ID, second.Note.ID}, b3.NoteIDs)
		_, err = c.Block(ctx, opt)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotModified, rec.last())
	})
}

func TestSearch(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c, _ := notesClient(t, e, nil)
		ctx := context.Background()
		n, err := c.Remember(ctx, sdk.Note{Kind: "tool_note", Title: "Stock API pagination", Body: "Follow next_cursor until empty.", Tags: []string{"stock"}}, "")
		require.NoError(t, err)
		_, err = c.Remember(ctx, sdk.Note{Kind: "procedure", Title: "Greeting", Body: "Greet once, then ask for the order.", Tags: []string{"chat"}}, "")
		require.NoError(t, err)

		found, err := c.Search(ctx, "pagination", nil, 5)
		require.NoError(t, err)
		require.Len(t, found, 1)
		require.Equal(t, n.Note.ID, found[0].ID)
		require.Equal(t, "Stock API pagination", found[0].Title)

		found, err = c.Search(ctx, "", []string{"chat"}, 0)
		require.NoError(t, err)
		require.Len(t, found, 1)
		require.Equal(t, "Greeting", found[0].Title)

		_, err = c.Search(ctx, "", nil, 0)
		var ae *sdk.Error
		require.True(t, errors.As(err, &ae), "got %v", err)
		require.Equal(t, http.StatusBadRequest, ae.Status)
		require.Equal(t, "invalid_member", ae.Code)
	})
}
