package events_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// receiver is a webhook endpoint that verifies each request as the documentation tells a
// receiver to (written here from the description, not with events.VerifySignature) and
// answers the queued statuses, then 200.
type receiver struct {
	mu       sync.Mutex
	secret   string
	statuses []int
	got      []received
}

type received struct {
	eventID  string
	body     []byte
	verified bool
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ts := r.Header.Get("X-Agentmemory-Timestamp")
	m := hmac.New(sha256.New, []byte(rc.secret))
	m.Write([]byte(ts + "." + string(body)))
	want := "v1=" + hex.EncodeToString(m.Sum(nil))
	_, tsErr := strconv.ParseInt(ts, 10, 64)
	ok := tsErr == nil && hmac.Equal([]byte(want), []byte(r.Header.Get("X-Agentmemory-Signature")))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.got = append(rc.got, received{eventID: r.Header.Get("X-Agentmemory-Event-Id"), body: body, verified: ok})
	status := http.StatusOK
	if len(rc.statuses) > 0 {
		status, rc.statuses = rc.statuses[0], rc.statuses[1:]
	}
	if !ok {
		status = http.StatusUnauthorized
	}
	w.WriteHeader(status)
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// webhookSpace creates a space whose features name url as webhook.
func webhookSpace(t *testing.T, d *bun.DB, url string) string {
	t.Helper()
	ctx := context.Background()
	id, _, err := spaces.CreateWith(ctx, d, "hooks", time.Now(), spaces.CreateOptions{DirectPut: true})
	require.NoError(t, err)
	if url != "" {
		doc, _ := json.Marshal(map[string]any{"agent_memory": map[string]any{"enabled": true, "webhook_url": url}})
		_, _, err = spaces.Documents{DB: d, AllowPrivateWebhooks: true}.Put(ctx, d, auth.Principal{SpaceID: id, KeyID: "key_test", Kind: auth.KindPerson, Roles: []string{auth.RoleSecurity}}, spaces.DocFeatures, doc, time.Now())
		require.NoError(t, err)
	}
	return id
}

func TestWebhookSignedRetriedAndVisible(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		hasher := keyed.New([]byte("webhook-test-secret-0123456789abcdef"))
		signer := events.Signer{Hasher: &hasher}
		rc := &receiver{statuses: []int{http.StatusInternalServerError}}
		srv := httptest.NewServer(rc)
		t.Cleanup(srv.Close)
		hooked := webhookSpace(t, d, srv.URL+"/hook?token=abc")
		quiet := webhookSpace(t, d, "")
		var err error
		rc.secret, err = signer.Secret(hooked)
		require.NoError(t, err)

		now := time.Now().UTC()
		r := &events.Relay{DB: d, Now: func() time.Time { return now }, Webhooks: &events.Webhooks{
			Docs: spaces.Documents{DB: d}, Signer: signer, MinBackoff: time.Minute, AllowPrivate: true,
		}}
		e := enqueue(t, d, hooked)
		enqueue(t, d, quiet)

		_, err = r.DeliverWebhooks(ctx)
		require.NoError(t, err)
		got := rc.requests()
		require.Len(t, got, 1)
		require.True(t, got[0].verified, "the signature verifies")
		require.Equal(t, e.ID, got[0].eventID)
		var sentEvent events.Event
		require.NoError(t, json.Unmarshal(got[0].body, &sentEvent))
		require.Equal(t, e, sentEvent, "the body is the event JSON")

		items, err := events.List(ctx, d, hooked, 0, 10)
		require.NoError(t, err)
		require.Len(t, items, 1)
		require.NotNil(t, items[0].Webhook)
		require.Equal(t, events.WebhookStatus{State: "pending", Attempts: 1, LastStatus: 500, LastError: "answered 500", NextAttemptAt: ptr(now.Add(time.Minute).Truncate(time.Microsecond))},
			normalize(*items[0].Webhook))

		// Not due yet: nothing is sent.
		_, err = r.DeliverWebhooks(ctx)
		require.NoError(t, err)
		require.Len(t, rc.requests(), 1)

		now = now.Add(2 * time.Minute)
		_, err = r.DeliverWebhooks(ctx)
		require.NoError(t, err)
		got = rc.requests()
		require.Len(t, got, 2, "the 500 was retried once")
		require.True(t, got[1].verified)
		require.Equal(t, got[0].body, got[1].body, "a retry sends the same event")

		items, err = events.List(ctx, d, hooked, 0, 10)
		require.NoError(t, err)
		w := items[0].Webhook
		require.Equal(t, "delivered", w.State)
		require.Equal(t, 2, w.Attempts)
		require.Equal(t, 200, w.LastStatus)
		require.NotNil(t, w.DeliveredAt)
		require.Nil(t, w.NextAttemptAt)

		quietItems, err := events.List(ctx, d, quiet, 0, 10)
		require.NoError(t, err)
		require.Len(t, quietItems, 1)
		require.Nil(t, quietItems[0].Webhook, "a space without webhook gets no delivery")
	})
}

func TestWebhookFailsAfterMaxAttempts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		hasher := keyed.New([]byte("webhook-test-secret-0123456789abcdef"))
		rc := &receiver{statuses: []int{503, 503, 503}}
		srv := httptest.NewServer(rc)
		t.Cleanup(srv.Close)
		space := webhookSpace(t, d, srv.URL)
		rc.secret, _ = events.Signer{Hasher: &hasher}.Secret(space)
		now := time.Now().UTC()
		r := &events.Relay{DB: d, Now: func() time.Time { return now }, Webhooks: &events.Webhooks{
			Docs: spaces.Documents{DB: d}, Signer: events.Signer{Hasher: &hasher}, MaxAttempts: 2, MinBackoff: time.Second, AllowPrivate: true,
		}}
		enqueue(t, d, space)
		for range 3 {
			_, err := r.DeliverWebhooks(ctx)
			require.NoError(t, err)
			now = now.Add(time.Hour)
		}
		require.Len(t, rc.requests(), 2, "no attempt after the last one")
		items, err := events.List(ctx, d, space, 0, 10)
		require.NoError(t, err)
		require.Equal(t, "failed", items[0].Webhook.State)
		require.Equal(t, 503, items[0].Webhook.LastStatus)
	})
}

// TestWebhookRefusesPrivateAddresses: without AllowPrivate, a delivery whose URL resolves
// to a loopback address (here a name, "localhost", as DNS rebinding would) is refused at
// dial and nothing reaches the receiver; a connection error is recorded generically, never
// as the raw dial error.
func TestWebhookRefusesPrivateAddresses(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		hasher := keyed.New([]byte("webhook-test-secret-0123456789abcdef"))
		rc := &receiver{}
		srv := httptest.NewServer(rc)
		t.Cleanup(srv.Close)
		port := srv.Listener.Addr().(*net.TCPAddr).Port
		// Stored with the opt-in (as a document written before the check would be).
		byName := webhookSpace(t, d, fmt.Sprintf("http://localhost:%d/hook", port))
		byIP := webhookSpace(t, d, srv.URL+"/hook")
		now := time.Now().UTC()
		r := &events.Relay{DB: d, Now: func() time.Time { return now }, Webhooks: &events.Webhooks{
			Docs: spaces.Documents{DB: d}, Signer: events.Signer{Hasher: &hasher}, MinBackoff: time.Minute,
		}}
		enqueue(t, d, byName)
		enqueue(t, d, byIP)
		_, err := r.DeliverWebhooks(ctx)
		require.NoError(t, err)
		require.Empty(t, rc.requests(), "no request reaches a private address")
		for _, space := range []string{byName, byIP} {
			items, err := events.List(ctx, d, space, 0, 10)
			require.NoError(t, err)
			require.Len(t, items, 1)
			require.Equal(t, "refused: private address", items[0].Webhook.LastError)
			require.Equal(t, "pending", items[0].Webhook.State)
		}

		// With the opt-in, a closed port: the error is generic.
		closed := httptest.NewServer(rc)
		closedURL := closed.URL
		closed.Close()
		space := webhookSpace(t, d, closedURL)
		r.Webhooks = &events.Webhooks{Docs: spaces.Documents{DB: d}, Signer: events.Signer{Hasher: &hasher}, AllowPrivate: true}
		enqueue(t, d, space)
		_, err = r.DeliverWebhooks(ctx)
		require.NoError(t, err)
		items, err := events.List(ctx, d, space, 0, 10)
		require.NoError(t, err)
		require.Equal(t, "connection failed", items[0].Webhook.LastError)
	})
}

// TestFeaturesRefuseUnsafeWebhookURL: PUT features refuses credentials, other schemes and
// literal non-public hosts (fault.Invalid naming the member); nothing is stored.
func TestFeaturesRefuseUnsafeWebhookURL(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		id, _, err := spaces.CreateWith(ctx, d, "ssrf", time.Now(), spaces.CreateOptions{DirectPut: true})
		require.NoError(t, err)
		p := auth.Principal{SpaceID: id, KeyID: "key_test", Kind: auth.KindPerson, Roles: []string{auth.RoleSecurity}}
		docs := spaces.Documents{DB: d}
		for _, u := range []string{"http://127.0.0.1:8080/x", "http://[::1]/", "http://169.254.169.254/latest/meta-data/",
			"http://10.0.0.7/", "http://192.168.0.1/", "http://0.0.0.0/", "http://224.0.0.1/", "http://[fe80::1]/",
			"http://localhost/", "https://user:pass@hooks.example.com/", "ftp://hooks.example.com/", "file:///etc/passwd"} {
			doc, _ := json.Marshal(map[string]any{"agent_memory": map[string]any{"enabled": true, "webhook_url": u}})
			_, _, err := docs.Put(ctx, d, p, spaces.DocFeatures, doc, time.Now())
			var f *fault.Error
			require.ErrorAs(t, err, &f, u)
			require.Equal(t, fault.Invalid, f.Kind, u)
			require.Equal(t, "agent_memory.webhook_url", f.Details["member"], u)
			require.NotContains(t, f.Error(), u, "the message does not echo the URL")
		}
		_, version, err := docs.Get(ctx, id, spaces.DocFeatures)
		require.NoError(t, err)
		require.Zero(t, version, "nothing was stored")
		doc := []byte(`{"agent_memory":{"enabled":true,"webhook_url":"https://hooks.example.com/in?token=x"}}`)
		_, version, err = docs.Put(ctx, d, p, spaces.DocFeatures, doc, time.Now())
		require.NoError(t, err)
		require.EqualValues(t, 1, version)
	})
}

func TestVerifySignature(t *testing.T) {
	body := []byte(`{"id":"evt_1","type":"agent_memory.note_created"}`)
	now := time.Unix(1_800_000_000, 0)
	sig := events.Sign("whsec_k", now.Unix(), body)
	h := http.Header{}
	h.Set(events.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(events.HeaderSignature, sig)
	require.NoError(t, events.VerifySignature("whsec_k", h, body, now.Add(time.Minute), 5*time.Minute))
	require.Error(t, events.VerifySignature("whsec_other", h, body, now, 5*time.Minute), "another key")
	require.Error(t, events.VerifySignature("whsec_k", h, append(body, ' '), now, 5*time.Minute), "a changed body")
	require.Error(t, events.VerifySignature("whsec_k", h, body, now.Add(10*time.Minute), 5*time.Minute), "a replay after the tolerance")
	var none events.Signer
	_, err := none.Secret("spc_a")
	require.ErrorIs(t, err, events.ErrNoSigner)
}

func ptr[T any](v T) *T { return &v }

// normalize puts a status's times in UTC at microsecond precision (what both databases keep).
func normalize(w events.WebhookStatus) events.WebhookStatus {
	if w.NextAttemptAt != nil {
		w.NextAttemptAt = ptr(w.NextAttemptAt.UTC().Truncate(time.Microsecond))
	}
	return w
}
