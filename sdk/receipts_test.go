package sdk_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
	"github.com/agentmemory/agentmemory/sdk/receiptlog"
)

// waitCheckpoint polls the receipt log's checkpoint until it is larger than after (the dev
// server's log signs one at most once a second while it grows).
func waitCheckpoint(t *testing.T, c *sdk.Client, after int64) sdk.ReceiptCheckpoint {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		cp, err := c.ReceiptCheckpoint(context.Background())
		if err == nil && cp.Size > after {
			return cp
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint past %d: %v", after, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Issue 32: the Go SDK fetches a receipt's proof in the deployment's receipt log and a
// consistency proof, and checks both offline with the published keys; a changed leaf or
// checkpoint fails.
func TestVerifyReceiptInLog(t *testing.T) {
	srv := devserver.Shared(t)
	ctx := context.Background()
	c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: srv.Admin})
	if err != nil {
		t.Fatal(err)
	}
	srv.Key(t, "log-a") // a receipt (key.create) in the space
	old := waitCheckpoint(t, c, 0)
	var keys struct {
		Keys []struct {
			PublicKey string `json:"public_key"`
		} `json:"keys"`
	}
	srv.MustDo(t, "GET", "/v1/signing-keys", "", nil, &keys)
	var pubs []string
	for _, k := range keys.Keys {
		pubs = append(pubs, k.PublicKey)
	}
	verifiers, err := receiptlog.Verifiers(pubs...)
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Receipts []struct {
			ID string `json:"id"`
		} `json:"receipts"`
	}
	srv.MustDo(t, "GET", "/v1/receipts?limit=1", srv.Admin, nil, &page)
	p, err := c.ReceiptProof(ctx, page.Receipts[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := receiptlog.VerifyReceipt(p, verifiers); err != nil {
		t.Fatal(err)
	}
	forged := p
	forged.LeafHash = "00" + p.LeafHash[2:]
	if receiptlog.VerifyReceipt(forged, verifiers) == nil {
		t.Fatal("a changed leaf hash verified")
	}

	srv.Key(t, "log-b")
	newer := waitCheckpoint(t, c, old.Size)
	cons, err := c.ReceiptConsistency(ctx, old.Size, newer.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := receiptlog.VerifyConsistency(old, newer, cons, verifiers); err != nil {
		t.Fatal(err)
	}
	bent := newer
	bent.Hash = old.Hash
	if receiptlog.VerifyConsistency(old, bent, cons, verifiers) == nil {
		t.Fatal("a checkpoint whose root was changed verified")
	}
}
