package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/netguard"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Webhook request headers. The signature is "v1=" followed by the lower-case hex
// HMAC-SHA256, keyed with the space's webhook secret (the whole "whsec_..." string as bytes),
// of the timestamp header's value, a ".", and the raw request body:
//
//	v1=hex(HMAC_SHA256(secret, timestamp + "." + body))
//
// A receiver recomputes it over the body bytes as received (before any JSON parsing),
// compares in constant time, refuses a timestamp more than 5 minutes from its clock (replay),
// and drops an event id it has already seen (deliveries are at least once). VerifySignature
// does exactly this but the dedup.
const (
	HeaderSignature = "X-Agentmemory-Signature"
	HeaderTimestamp = "X-Agentmemory-Timestamp" // Unix seconds
	HeaderEvent     = "X-Agentmemory-Event-Id"
	HeaderType      = "X-Agentmemory-Event-Type"
)

// Webhook delivery states (models.WebhookDelivery.State).
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
	DeliveryCancelled = "cancelled"
)

// outbox.webhook_state values: not yet looked at, no webhook, delivery row created.
const (
	webhookUnseen    = ""
	webhookNone      = "none"
	webhookScheduled = "scheduled"
)

// Signer derives each space's webhook secret from the server secret and signs deliveries.
type Signer struct {
	// Hasher holds the server secret; nil makes every method fail.
	Hasher *keyed.Hasher
}

// ErrNoSigner is returned when a Signer has no Hasher.
var ErrNoSigner = errors.New("events: webhook signer has no server secret")

// Secret returns the space's webhook secret: "whsec_" and 64 hex digits, derived from the
// server secret with purpose "webhook/v1/<space id>", the same on every replica. Rotating
// the server secret rotates it.
func (s Signer) Secret(spaceID string) (string, error) {
	if s.Hasher == nil {
		return "", ErrNoSigner
	}
	return "whsec_" + hex.EncodeToString(s.Hasher.Key("webhook/v1/"+spaceID)), nil
}

// Sign returns the signature header value for body sent at timestamp ts (Unix seconds).
func Sign(secret string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature checks a received webhook: the signature header over the timestamp header
// and body, and the timestamp within tolerance of now. It returns nil when both hold.
func VerifySignature(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	tsText := h.Get(HeaderTimestamp)
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return errors.New("events: webhook timestamp missing or not an integer")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("events: webhook timestamp outside tolerance")
	}
	want := Sign(secret, ts, body)
	if !hmac.Equal([]byte(want), []byte(h.Get(HeaderSignature))) {
		return errors.New("events: webhook signature mismatch")
	}
	return nil
}

// Webhooks configures delivery of events to each space's webhook (features
// agent_memory.webhook_url). A delivery that does not get a 2xx answer (a redirect counts as
// a failure) is retried after MinBackoff, doubling up to MaxBackoff, until MaxAttempts; then
// it is "failed". Order between a space's events is not guaranteed: receivers use
// occurred_at and drop duplicate ids.
type Webhooks struct {
	// Docs reads each space's features document.
	Docs spaces.Documents
	// Signer signs each request.
	Signer Signer
	// Client sends the requests (default: 10 s timeout, no redirects, no proxy, and a dialer
	// that refuses loopback, private, link-local, unspecified and multicast addresses after
	// resolution, so DNS rebinding is refused too). A Client set here is used as is.
	Client *http.Client
	// AllowPrivate lets the default client dial non-public addresses: only for tests with a
	// receiver on 127.0.0.1 (AGENTMEMORY_WEBHOOK_ALLOW_PRIVATE). Never on in production.
	AllowPrivate bool
	// MaxAttempts before a delivery is failed (default 15).
	MaxAttempts int
	// MinBackoff is the pause after the first failure (default 5 s).
	MinBackoff time.Duration
	// MaxBackoff caps the pause (default 1 h).
	MaxBackoff time.Duration

	once sync.Once
}

func (w *Webhooks) client() *http.Client {
	w.once.Do(func() {
		if w.Client != nil {
			return
		}
		dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
		if !w.AllowPrivate {
			dialer.Control = netguard.Control
		}
		w.Client = &http.Client{
			Timeout: 10 * time.Second,
			Transport: &http.Transport{
				Proxy:               nil, // a proxy would dial for us, past the address check
				DialContext:         dialer.DialContext,
				TLSHandshakeTimeout: 5 * time.Second,
				MaxIdleConns:        16,
				IdleConnTimeout:     90 * time.Second,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	})
	return w.Client
}

func (w *Webhooks) backoff(attempts int) time.Duration {
	lo, hi := w.MinBackoff, w.MaxBackoff
	if lo <= 0 {
		lo = 5 * time.Second
	}
	if hi <= 0 {
		hi = time.Hour
	}
	d := lo
	for i := 1; i < attempts && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

func (w *Webhooks) maxAttempts() int {
	if w.MaxAttempts <= 0 {
		return 15
	}
	return w.MaxAttempts
}

// DeliverWebhooks runs one webhook pass: it schedules a delivery for each new outbox event of
// a space with a webhook URL, then sends the deliveries that are due. It returns how many
// outbox rows and deliveries it handled.
func (r *Relay) DeliverWebhooks(ctx context.Context) (int, error) {
	r.init()
	if r.Webhooks == nil {
		return 0, errors.New("events: relay has no webhooks")
	}
	scheduled, err := r.scheduleWebhooks(ctx)
	if err != nil {
		return scheduled, err
	}
	sent, err := r.sendWebhooks(ctx)
	return scheduled + sent, err
}

// scheduleWebhooks looks at outbox rows not yet seen by the webhook job: a row of a space
// with a webhook URL gets a pending delivery (a copy of the event JSON); the others are
// marked as having none.
func (r *Relay) scheduleWebhooks(ctx context.Context) (int, error) {
	var n int
	err := r.job(ctx, "webhook", func(_, txCtx context.Context, idb bun.IDB, locked bool) error {
		var rows []models.OutboxEvent
		q := idb.NewSelect().Model(&rows).Column("seq", "id", "space_id", "payload", "created_at").
			Where("webhook_state = ?", webhookUnseen).Order("seq ASC").Limit(int64(r.Batch))
		if locked {
			q = q.For("UPDATE SKIP LOCKED")
		}
		if err := q.Scan(txCtx); err != nil {
			return fmt.Errorf("events: webhook schedule: %w", err)
		}
		urls := map[string]string{}
		now := r.now()
		for _, row := range rows {
			u, ok := urls[row.SpaceID]
			if !ok {
				f, err := r.Webhooks.Docs.Features(txCtx, row.SpaceID)
				if err != nil {
					return fmt.Errorf("events: webhook features: %w", err)
				}
				u = f.AgentMemory.WebhookURL
				urls[row.SpaceID] = u
			}
			state := webhookNone
			if u != "" {
				state = webhookScheduled
				d := &models.WebhookDelivery{
					EventID: row.ID, Seq: row.Seq, SpaceID: row.SpaceID, Payload: row.Payload,
					State: DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now,
				}
				if _, err := idb.NewInsert().Model(d).On("CONFLICT (event_id) DO NOTHING").Exec(txCtx); err != nil {
					return fmt.Errorf("events: webhook schedule: %w", err)
				}
			}
			if _, err := idb.NewUpdate().Model((*models.OutboxEvent)(nil)).Set("webhook_state = ?", state).
				Where("seq = ?", row.Seq).Exec(txCtx); err != nil {
				return fmt.Errorf("events: webhook schedule: %w", err)
			}
		}
		n = len(rows)
		return nil
	})
	return n, err
}

// sendWebhooks POSTs the due deliveries, oldest first, and records each outcome.
func (r *Relay) sendWebhooks(ctx context.Context) (int, error) {
	var n int
	err := r.job(ctx, "webhook", func(ctx, txCtx context.Context, idb bun.IDB, locked bool) error {
		now := r.now()
		var due []models.WebhookDelivery
		q := idb.NewSelect().Model(&due).
			Where("state = ? AND next_attempt_at <= ?", DeliveryPending, now).Order("seq ASC").Limit(int64(r.Batch))
		if locked {
			q = q.For("UPDATE SKIP LOCKED")
		}
		if err := q.Scan(txCtx); err != nil {
			return fmt.Errorf("events: webhook due: %w", err)
		}
		urls := map[string]string{}
		for i := range due {
			if ctx.Err() != nil {
				break // the rest stay due for the next pass
			}
			d := &due[i]
			u, ok := urls[d.SpaceID]
			if !ok {
				f, err := r.Webhooks.Docs.Features(txCtx, d.SpaceID)
				if err != nil {
					return fmt.Errorf("events: webhook features: %w", err)
				}
				u = f.AgentMemory.WebhookURL
				urls[d.SpaceID] = u
			}
			r.attempt(ctx, d, u)
			if _, err := idb.NewUpdate().Model(d).
				Column("state", "attempts", "last_status", "last_error", "next_attempt_at", "delivered_at", "updated_at").
				WherePK().Exec(txCtx); err != nil {
				return fmt.Errorf("events: webhook record: %w", err)
			}
			n++
		}
		return nil
	})
	return n, err
}

// attempt sends d to url (when set) and updates d's state in memory.
func (r *Relay) attempt(ctx context.Context, d *models.WebhookDelivery, target string) {
	now := r.now()
	d.UpdatedAt = now
	if target == "" {
		d.State, d.LastError = DeliveryCancelled, "the space has no webhook url"
		return
	}
	d.Attempts++
	status, err := r.post(ctx, d, target)
	d.LastStatus = status
	switch {
	case err == nil:
		d.State, d.LastError, d.DeliveredAt = DeliveryDelivered, "", &now
		r.Metrics.webhook("delivered")
		return
	case d.Attempts >= r.Webhooks.maxAttempts():
		d.State = DeliveryFailed
		r.Metrics.webhook("failed")
	default:
		d.NextAttemptAt = now.Add(r.Webhooks.backoff(d.Attempts))
		r.Metrics.webhook("retry")
	}
	d.LastError = err.Error()
}

// Delivery errors recorded in models.WebhookDelivery.LastError (and shown by GET /v1/events).
// They are generic on purpose: a raw dial error would tell the space's users about the
// server's network.
var (
	errInvalidURL  = errors.New("invalid webhook url")
	errRefused     = errors.New("refused: private address")
	errConnection  = errors.New("connection failed")
	errUnavailable = errors.New("signing unavailable")
)

// post sends one signed request; a non-2xx answer is an error ("answered <status>"). Errors
// are generic (see errConnection): they never carry the URL (it may hold a token), an
// address or a dial error.
func (r *Relay) post(ctx context.Context, d *models.WebhookDelivery, target string) (int, error) {
	secret, err := r.Webhooks.Signer.Secret(d.SpaceID)
	if err != nil {
		return 0, errUnavailable
	}
	if netguard.CheckURL(target, true) != nil {
		return 0, errInvalidURL // scheme, host, credentials; addresses are checked at dial
	}
	body := []byte(d.Payload)
	ts := r.now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, errInvalidURL
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentmemory-webhook/1")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	req.Header.Set(HeaderEvent, d.EventID)
	req.Header.Set(HeaderType, eventType(d.Payload))
	resp, err := r.Webhooks.client().Do(req)
	if err != nil {
		if errors.Is(err, netguard.ErrPrivate) {
			return 0, errRefused
		}
		return 0, errConnection
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // drained so the connection is reused; the status is already read
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// eventType reads "type" from a stored payload.
func eventType(payload string) string {
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(payload), &e) // a payload is always the relay's own JSON; an empty type only labels a metric
	return e.Type
}
