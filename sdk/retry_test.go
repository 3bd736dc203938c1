package sdk_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/sdk"
)

// flaky answers status (with retryAfter when set) to the first failures requests, then a state.
func flaky(t *testing.T, failures int32, status int, retryAfter string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if n.Add(1) <= failures {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":{"code":"busy","message":"try later"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"body":{"step":"x"},"version":3}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestRetriesBackOffOn5xx(t *testing.T) {
	srv, n := flaky(t, 2, http.StatusInternalServerError, "")
	c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: "k", RetryBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.AgentState(sdk.Conversation("c-1")).Get(context.Background())
	if err != nil || st.Version != 3 {
		t.Fatalf("Get = %v, %v; want version 3 after two retries", st.Version, err)
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("%d requests, want 3", got)
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	srv, n := flaky(t, 1, http.StatusTooManyRequests, "1")
	c, _ := sdk.New(sdk.Options{BaseURL: srv.URL, Key: "k"})
	start := time.Now()
	if _, err := c.AgentState(sdk.Conversation("c-1")).Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Fatalf("retried after %v, want the 1 s of Retry-After", waited)
	}
	if got := n.Load(); got != 2 {
		t.Fatalf("%d requests, want 2", got)
	}
}

func TestRetryGivesUp(t *testing.T) {
	// A Retry-After beyond MaxRetryWait is returned at once, with its RetryAfter.
	srv, n := flaky(t, 100, http.StatusTooManyRequests, "3600")
	c, _ := sdk.New(sdk.Options{BaseURL: srv.URL, Key: "k"})
	_, err := c.AgentState(sdk.Conversation("c-1")).Get(context.Background())
	var ae *sdk.Error
	if !errors.As(err, &ae) || !errors.Is(err, sdk.ErrRateLimited) || ae.RetryAfter != time.Hour || ae.Code != "busy" {
		t.Fatalf("err = %v, want 429 busy with RetryAfter 1h", err)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d requests, want 1", got)
	}

	// MaxRetries bounds the retries; negative disables them.
	srv, n = flaky(t, 100, http.StatusBadGateway, "")
	c, _ = sdk.New(sdk.Options{BaseURL: srv.URL, Key: "k", MaxRetries: 2, RetryBackoff: time.Millisecond})
	if _, err := c.AgentState(sdk.Conversation("c-1")).Get(context.Background()); err == nil {
		t.Fatal("want an error after the retries")
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("%d requests, want 3", got)
	}
	srv, n = flaky(t, 100, http.StatusServiceUnavailable, "")
	c, _ = sdk.New(sdk.Options{BaseURL: srv.URL, Key: "k", MaxRetries: -1})
	if _, err := c.AgentState(sdk.Conversation("c-1")).Get(context.Background()); !errors.Is(err, sdk.ErrUnavailable) {
		t.Fatalf("err = %v, want 503", err)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d requests, want 1", got)
	}
}

func TestNoRetryOn4xx(t *testing.T) {
	srv, n := flaky(t, 100, http.StatusBadRequest, "")
	c, _ := sdk.New(sdk.Options{BaseURL: srv.URL, Key: "k"})
	if _, err := c.AgentState(sdk.Conversation("c-1")).Get(context.Background()); err == nil {
		t.Fatal("want 400")
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d requests, want 1", got)
	}
}
