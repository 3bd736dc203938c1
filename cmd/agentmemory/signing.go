package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/signing"
)

// cliHTTP is the client of the verification commands: bounded, so a silent server cannot
// hang a check.
var cliHTTP = &http.Client{Timeout: 60 * time.Second}

// signingKeyCmd: `agentmemory signing-key generate|public`: make a new signing key, or print
// the public key of AGENTMEMORY_SIGNING_KEY (what to add to _PREVIOUS on rotation).
func signingKeyCmd(cl config.Client, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "signing-key", Short: "Ed25519 signing keys of certificates and receipt heads (docs/signatures.md)"}
	cmd.AddCommand(&cobra.Command{
		Use:   "generate",
		Short: "Print a new signing key (for AGENTMEMORY_SIGNING_KEY), its public key and id",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			seed, pub, err := signing.GenerateKey()
			if err != nil {
				return err
			}
			p, _ := signing.ParsePublicKey(pub)
			fmt.Fprintf(stdout, "AGENTMEMORY_SIGNING_KEY=%s\npublic_key=%s\nkey_id=%s\n", seed, pub, signing.KeyID(p))
			return nil
		},
	}, &cobra.Command{
		Use:   "public",
		Short: "Print the public key and id of AGENTMEMORY_SIGNING_KEY",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			k := cl.SigningKey
			if k == "" {
				return errors.New("AGENTMEMORY_SIGNING_KEY is not set")
			}
			pub, err := signing.PublicOf(k)
			if err != nil {
				return err
			}
			p, _ := signing.ParsePublicKey(pub)
			fmt.Fprintf(stdout, "public_key=%s\nkey_id=%s\n", pub, signing.KeyID(p))
			return nil
		},
	})
	return cmd
}

// verifyCertificateCmd: `agentmemory verify-certificate FILE --keys URL|FILE` checks a signed
// certificate (the JSON of GET /v1/erasures/{id}/certificate) offline and prints what it
// proves; any changed byte makes it fail (exit 1).
func verifyCertificateCmd(cl config.Client, stdout io.Writer) *cobra.Command {
	var keysFrom string
	cmd := &cobra.Command{
		Use:   "verify-certificate FILE",
		Short: "Verify a signed erasure certificate offline and print what it proves",
		Long: `Verify a signed erasure certificate: the JSON GET /v1/erasures/{id}/certificate returns,
{"certificate": {...}, "signature": {"key_id", "algorithm": "Ed25519", "value"}}.

--keys names the public keys: a file holding what GET /v1/signing-keys returns (kept from
when you trust the server), or a URL (the server's base URL or its /v1/signing-keys).
Default: $AGENTMEMORY_URL/v1/signing-keys. The signature covers the RFC 8785 canonical JSON
of the certificate, so any change of content fails; formatting does not matter.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			name, doc, sig, err := signing.Envelope(data)
			if err != nil {
				return err
			}
			if name != "certificate" {
				return fmt.Errorf("%s holds a signed %q, not a certificate", args[0], name)
			}
			keys, err := loadKeys(cmd.Context(), keysFrom, cl)
			if err != nil {
				return err
			}
			if err := signing.Verify(doc, sig, keys); err != nil {
				return fmt.Errorf("certificate does NOT verify: %w", err)
			}
			var cert map[string]any
			if err := json.Unmarshal(doc, &cert); err != nil {
				return fmt.Errorf("certificate: %w", err)
			}
			// The type is signed: a receipt head, or any other signed document, renamed
			// "certificate" verifies but is not a certificate.
			if cert["type"] != compliance.CertificateType || cert["erasure_id"] == nil || cert["stores"] == nil {
				return fmt.Errorf("%s: the signed document is not an erasure certificate (type %v)", args[0], cert["type"])
			}
			fmt.Fprintf(stdout, "signature: valid (%s, key %s%s)\n", sig.Algorithm, sig.KeyID, keyState(keys, sig.KeyID))
			fmt.Fprintln(stdout, "the certificate proves, as signed by the service:")
			printDoc(stdout, cert, "  ")
			return nil
		},
	}
	cmd.Flags().StringVar(&keysFrom, "keys", "", "public keys: a file (GET /v1/signing-keys's JSON) or a URL; default $AGENTMEMORY_URL/v1/signing-keys")
	return cmd
}

// receiptsVerifyLong is `agentmemory receipts verify`'s help.
const receiptsVerifyLong = `Recompute every hash and link of a space's receipt chain, as GET /v1/receipts/verify
does, here on this machine; with --since-head FILE (a signed head kept from
GET /v1/receipts/head), also check the head's signature and that the chain still extends it:
a chain rewritten with recomputed hashes, truncated or rolled back to an older copy fails.

The chain is read through the API with --url and --key (or $AGENTMEMORY_URL and
$AGENTMEMORY_KEY; a key with role admin or compliance), else straight from the database of
the configuration (DATABASE_URL, or the SQLite file in --data-dir), for the head's space.

With --log (an operator's check, on the database): walk the deployment's whole receipt log
(issue 32) instead: every leaf against its receipt recomputed from content, the indexes,
each space's order, the tree's root at every stored checkpoint (signatures checked with
--keys when given) and at --checkpoint FILE (one kept from GET /v1/receipts/checkpoint: a
rewritten or forked log fails), and the stored tree hashes proofs come from.
Exit status 1 when the chain (or the log) does not verify.`

// receiptsVerifyFlags are `agentmemory receipts verify`'s flags.
type receiptsVerifyFlags struct {
	sinceFile, baseURL, key, keysFrom, dataDir, checkpointFile string
	wholeLog                                                   bool
}

// receiptsCmd: `agentmemory receipts verify [--since-head FILE]`.
func receiptsCmd(load func() (config.Config, error), cl config.Client, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "receipts", Short: "The receipt chain (GOV-1)"}
	var f receiptsVerifyFlags
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Recompute the receipt chain and check it extends an older signed head",
		Long:  receiptsVerifyLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReceiptsVerify(cmd, load, cl, stdout, f)
		},
	}
	verify.Flags().StringVar(&f.sinceFile, "since-head", "", "a signed head (GET /v1/receipts/head's JSON) the chain must extend")
	verify.Flags().StringVar(&f.baseURL, "url", "", "base URL of the API; default $AGENTMEMORY_URL; empty: read the database")
	verify.Flags().StringVar(&f.key, "key", "", "API key (admin or compliance); default $AGENTMEMORY_KEY")
	verify.Flags().StringVar(&f.keysFrom, "keys", "", "public keys for the head's signature: a file or URL; default <url>/v1/signing-keys")
	verify.Flags().StringVar(&f.dataDir, "data-dir", "./data", "data dir of the SQLite database (without --url and DATABASE_URL)")
	verify.Flags().BoolVar(&f.wholeLog, "log", false, "verify the deployment's whole receipt log in the database (issue 32)")
	verify.Flags().StringVar(&f.checkpointFile, "checkpoint", "", "with --log: a checkpoint kept from GET /v1/receipts/checkpoint the log must still hold")
	cmd.AddCommand(verify, verifyProofCmd(cl, stdout))
	return cmd
}

// runReceiptsVerify runs `agentmemory receipts verify` with f (--url and --key defaulting to
// cl's): the whole log with --log, else the chain through the API (--url) or in the database,
// checked against the signed head of --since-head when given.
func runReceiptsVerify(cmd *cobra.Command, load func() (config.Config, error), cl config.Client, stdout io.Writer, f receiptsVerifyFlags) error {
	ctx := cmd.Context()
	if f.baseURL == "" {
		f.baseURL = cl.URL
	}
	if f.key == "" {
		f.key = cl.Key
	}
	if f.wholeLog {
		return verifyLogCmd(ctx, stdout, load, f.dataDir, cmd.Flags().Changed("data-dir"), f.keysFrom, f.checkpointFile, cl)
	}
	var since *receipts.Head
	if f.sinceFile != "" {
		h, err := readSignedHead(ctx, f.sinceFile, f.keysFrom, f.baseURL, cl)
		if err != nil {
			return err
		}
		since = &h
		fmt.Fprintf(stdout, "signed head: valid signature; space %s, seq %d, hash %s\n", h.SpaceID, h.Seq, h.Hash)
	}
	var v receipts.Verification
	var err error
	if f.baseURL != "" {
		if f.key == "" {
			return errors.New("receipts verify: --key (or AGENTMEMORY_KEY) is required with --url")
		}
		v, err = verifyThroughAPI(ctx, cliHTTP, f.baseURL, f.key, since)
	} else {
		if since == nil {
			return errors.New("receipts verify: without --url, --since-head is required (it names the space)")
		}
		v, err = verifyInDatabase(ctx, load, f.dataDir, cmd.Flags().Changed("data-dir"), since)
	}
	if err != nil {
		return err
	}
	return reportVerification(stdout, v, since)
}

// verifyProofCmd: `agentmemory receipts verify-proof FILE [--keys K] [--checkpoint OLD]`.
func verifyProofCmd(cl config.Client, stdout io.Writer) *cobra.Command {
	var keysFrom, oldFile string
	cmd := &cobra.Command{
		Use:   "verify-proof FILE",
		Short: "Check a receipt's inclusion proof, or a consistency proof of the receipt log, offline",
		Long: `Check, on this machine, a proof saved from the API.

A receipt's proof (GET /v1/receipts/{id}/proof): the receipt's content gives its leaf hash,
the leaf and the RFC 6962 path give its chain entry's Merkle root, and the entry's fields
give its hash; and, when the proof has its log part (the receipt is in a checkpoint), the
checkpoint's note is signed by one of the deployment's keys (--keys) and the receipt's hash
with the log hashes gives the checkpoint's root. With --checkpoint OLD (a checkpoint kept
from GET /v1/receipts/checkpoint) of the same size, the two must be the same tree.

A consistency proof (GET /v1/receipts/consistency?from=OLD_SIZE): with --checkpoint OLD,
the log's newer signed checkpoint (in the answer) extends OLD: not rewritten, not forked.

A changed receipt, path, entry, checkpoint or hash fails (exit status 1).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			var kind struct {
				Receipt json.RawMessage `json:"receipt"`
				From    json.RawMessage `json:"from"`
			}
			if err := json.Unmarshal(data, &kind); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			var old *receipts.Checkpoint
			if oldFile != "" {
				c, err := readCheckpoint(oldFile)
				if err != nil {
					return err
				}
				old = &c
			}
			keys := func() (note.Verifiers, error) {
				list, err := loadKeys(cmd.Context(), keysFrom, cl)
				if err != nil {
					return nil, err
				}
				return signing.NoteVerifiers(receipts.CheckpointName, list)
			}
			if kind.Receipt == nil && kind.From != nil {
				return verifyConsistencyFile(stdout, args[0], data, old, keys)
			}
			return verifyProofFile(stdout, args[0], data, old, keysFrom != "" || cl.URL != "", keys)
		},
	}
	cmd.Flags().StringVar(&keysFrom, "keys", "", "public keys for the checkpoint's signature: a file (GET /v1/signing-keys's JSON) or a URL; default $AGENTMEMORY_URL/v1/signing-keys")
	cmd.Flags().StringVar(&oldFile, "checkpoint", "", "a checkpoint kept from GET /v1/receipts/checkpoint that the proof's must agree with or extend")
	return cmd
}

// verifyProofFile checks a receipt's proof (data, read from name): the batch part always, the
// log part when it has one and keys can be loaded (haveKeys), against old when given.
func verifyProofFile(stdout io.Writer, name string, data []byte, old *receipts.Checkpoint, haveKeys bool, keys func() (note.Verifiers, error)) error {
	var p receipts.Proof
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := p.Verify(); err != nil {
		return fmt.Errorf("proof does NOT verify: %w", err)
	}
	fmt.Fprintf(stdout, "proof: valid; receipt %s (%s, %s) is leaf %d of %d in the chain entry ending at seq %d\n",
		p.Receipt.ID, p.Receipt.Kind, p.Receipt.Action, p.LeafIndex, p.Batch.Count, p.Batch.Seq)
	fmt.Fprintf(stdout, "entry hash %s (root %s, previous %s)\n", p.Batch.Hash, p.Batch.Root, p.Batch.PrevHash)
	switch {
	case p.Log == nil:
		fmt.Fprintln(stdout, "log: the receipt is not in a checkpoint yet (ask again in a few seconds)")
		return nil
	case !haveKeys:
		fmt.Fprintln(stdout, "log: not checked: give --keys FILE|URL (the deployment's public keys) to check the checkpoint")
		return nil
	}
	vs, err := keys()
	if err != nil {
		return err
	}
	if err := p.VerifyInLog(vs); err != nil {
		return fmt.Errorf("proof does NOT verify in the log: %w", err)
	}
	cp := p.Log.Checkpoint
	if old != nil && old.Size == cp.Size && old.Hash != cp.Hash {
		return fmt.Errorf("proof does NOT verify: %w: the kept checkpoint of size %d has another root", receipts.ErrFork, old.Size)
	}
	fmt.Fprintf(stdout, "log: valid; leaf %d of the signed checkpoint of size %d (root %s, signed %s)\n",
		p.Log.Index, cp.Size, cp.Hash, cp.At.Format(time.RFC3339))
	return nil
}

// verifyConsistencyFile checks a consistency proof (data, read from name) against old, the
// kept checkpoint: the answer's checkpoint must extend it.
func verifyConsistencyFile(stdout io.Writer, name string, data []byte, old *receipts.Checkpoint, keys func() (note.Verifiers, error)) error {
	var c receipts.Consistency
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if old == nil || c.Checkpoint == nil {
		return errors.New("verify-proof: a consistency proof is checked against --checkpoint OLD, and must carry the newer checkpoint (ask with to = a checkpoint's size, or none)")
	}
	vs, err := keys()
	if err != nil {
		return err
	}
	if err := receipts.VerifyConsistency(*old, *c.Checkpoint, c, vs); err != nil {
		return fmt.Errorf("consistency does NOT verify: %w", err)
	}
	fmt.Fprintf(stdout, "consistency: valid; the signed checkpoint of size %d extends the kept one of size %d\n", c.Checkpoint.Size, old.Size)
	return nil
}

// readCheckpoint reads a checkpoint file (GET /v1/receipts/checkpoint's JSON).
func readCheckpoint(path string) (receipts.Checkpoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return receipts.Checkpoint{}, err
	}
	var c receipts.Checkpoint
	if err := json.Unmarshal(data, &c); err != nil || c.Size == 0 || c.Note == "" {
		return receipts.Checkpoint{}, fmt.Errorf("%s: not a receipt log checkpoint", path)
	}
	return c, nil
}

// readSignedHead reads a signed head file and checks its signature against the keys from
// keysFrom (default: the API's /v1/signing-keys).
func readSignedHead(ctx context.Context, path, keysFrom, baseURL string, cl config.Client) (receipts.Head, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return receipts.Head{}, err
	}
	name, doc, sig, err := signing.Envelope(data)
	if err != nil {
		return receipts.Head{}, err
	}
	if name != "head" {
		return receipts.Head{}, fmt.Errorf("%s holds a signed %q, not a receipt head", path, name)
	}
	if keysFrom == "" && baseURL != "" {
		keysFrom = baseURL
	}
	keys, err := loadKeys(ctx, keysFrom, cl)
	if err != nil {
		return receipts.Head{}, err
	}
	if err := signing.Verify(doc, sig, keys); err != nil {
		return receipts.Head{}, fmt.Errorf("signed head does NOT verify: %w", err)
	}
	var h receipts.Head
	if err := json.Unmarshal(doc, &h); err != nil {
		return receipts.Head{}, fmt.Errorf("signed head: %w", err)
	}
	var typed struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(doc, &typed); err != nil || typed.Type != api.HeadType {
		return receipts.Head{}, fmt.Errorf("%s: the signed document is not a receipt head (type %q)", path, typed.Type)
	}
	if h.SpaceID == "" || h.Hash == "" {
		return receipts.Head{}, errors.New("signed head: space_id and hash are required")
	}
	return h, nil
}

// verifyThroughAPI pages GET /v1/receipts (each page carries the chain entries of its
// receipts) and recomputes the chain here, entry by entry, then compares its end with
// GET /v1/receipts/head. The listing resolves each receipt's manifest (issue 32): a receipt
// naming one that is missing, or that no longer gives its hash, fails (manifest_mismatch).
func verifyThroughAPI(ctx context.Context, hc *http.Client, baseURL, key string, since *receipts.Head) (receipts.Verification, error) {
	base := strings.TrimRight(baseURL, "/")
	var current struct {
		Head receipts.Head `json:"head"`
	}
	if err := getJSON(ctx, hc, base+"/v1/receipts/head", key, &current); err != nil {
		return receipts.Verification{}, err
	}
	if since != nil && since.SpaceID != current.Head.SpaceID {
		return receipts.Verification{Reason: receipts.ReasonHeadOtherSpace}, nil
	}
	w := &receipts.Walker{Since: since, RequireManifests: true}
	var after int64
	var entries []receipts.Batch // entries not walked yet, in chain order
	var held []receipts.Receipt  // receipts of entries[0] read so far
	for after < current.Head.Seq {
		var page struct {
			Receipts []receipts.Receipt `json:"receipts"`
			Batches  []receipts.Batch   `json:"batches"`
		}
		if err := getJSON(ctx, hc, fmt.Sprintf("%s/v1/receipts?after=%d&limit=1000", base, after), key, &page); err != nil {
			return receipts.Verification{}, err
		}
		for _, b := range page.Batches {
			if len(entries) == 0 || b.Seq > entries[len(entries)-1].Seq {
				entries = append(entries, b)
			}
		}
		for _, r := range page.Receipts {
			if r.Seq > current.Head.Seq {
				break // sealed after the head was read: the walk ends at that head
			}
			held = append(held, r)
			after = r.Seq
			for len(entries) > 0 && after >= entries[0].Seq {
				if !w.Next(entries[0], held) {
					return w.Result(0, "", false), nil
				}
				entries, held = entries[1:], nil
			}
		}
		if len(page.Receipts) == 0 {
			break
		}
	}
	for _, b := range entries {
		if b.Seq > current.Head.Seq {
			break
		}
		if !w.Next(b, held) { // an entry whose receipts the pages lacked
			return w.Result(0, "", false), nil
		}
		held = nil
	}
	return w.Result(current.Head.Seq, current.Head.Hash, true), nil
}

// verifyInDatabase opens the configured database (without migrating it) and verifies the
// head's space there.
func verifyInDatabase(ctx context.Context, load func() (config.Config, error), dataDir string, dataDirSet bool, since *receipts.Head) (receipts.Verification, error) {
	cfg, err := load()
	if err != nil {
		return receipts.Verification{}, err
	}
	if dataDirSet {
		cfg.DataDir = dataDir
	}
	d, err := db.Open(ctx, app.DatabaseURL(cfg), db.PoolOptions(cfg))
	if err != nil {
		return receipts.Verification{}, err
	}
	defer func() { _ = d.Close() }() // a read-only verification: a failed close loses nothing
	return receipts.VerifySince(ctx, d, since.SpaceID, since)
}

// verifyLogCmd opens the configured database (without migrating it), walks its whole receipt
// log (receipts.VerifyLog) and prints the result; a log that does not verify is an error.
func verifyLogCmd(ctx context.Context, stdout io.Writer, load func() (config.Config, error), dataDir string, dataDirSet bool, keysFrom, checkpointFile string, cl config.Client) error {
	var since *receipts.Checkpoint
	if checkpointFile != "" {
		c, err := readCheckpoint(checkpointFile)
		if err != nil {
			return err
		}
		since = &c
	}
	var verifiers note.Verifiers
	if keysFrom != "" || cl.URL != "" {
		keys, err := loadKeys(ctx, keysFrom, cl)
		if err != nil {
			return err
		}
		if verifiers, err = signing.NoteVerifiers(receipts.CheckpointName, keys); err != nil {
			return err
		}
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	if dataDirSet {
		cfg.DataDir = dataDir
	}
	d, err := db.Open(ctx, app.DatabaseURL(cfg), db.PoolOptions(cfg))
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }() // a read-only verification: a failed close loses nothing
	v, err := receipts.VerifyLog(ctx, d, verifiers, since)
	if err != nil {
		return err
	}
	if !v.OK {
		msg := fmt.Sprintf("log does NOT verify: %s after %d leaves", v.Reason, v.Size)
		if v.Index != nil {
			msg += fmt.Sprintf(" (at leaf %d)", *v.Index)
		}
		if v.CheckpointSize != nil {
			msg += fmt.Sprintf(" (at the checkpoint of size %d)", *v.CheckpointSize)
		}
		return errors.New(msg)
	}
	fmt.Fprintf(stdout, "log: ok, %d leaves recomputed, %d checkpoints checked", v.Size, v.Checkpoints)
	if verifiers == nil {
		fmt.Fprint(stdout, " (signatures not checked: no --keys)")
	}
	fmt.Fprintln(stdout)
	return nil
}

// reportVerification prints v; a chain that does not verify is an error (exit 1).
func reportVerification(stdout io.Writer, v receipts.Verification, since *receipts.Head) error {
	if v.OK {
		fmt.Fprintf(stdout, "chain: ok, %d receipts in %d entries recomputed", v.Count, v.Batches)
		if v.Unsealed > 0 {
			fmt.Fprintf(stdout, " (%d receipts not sealed yet)", v.Unsealed)
		}
		if since != nil {
			fmt.Fprintf(stdout, "; it extends the signed head at seq %d", since.Seq)
		}
		fmt.Fprintln(stdout)
		return nil
	}
	msg := "chain does NOT verify: " + v.Reason
	switch v.Reason {
	case receipts.ReasonHeadRewritten:
		msg += " (the entry at the signed head's seq has another hash: the chain was rewritten)"
	case receipts.ReasonHeadRolledBack:
		msg += " (the chain ends before the signed head: truncated or rolled back)"
	case receipts.ReasonHeadOtherSpace:
		msg += " (the signed head is of another space)"
	}
	if v.Broken != nil {
		msg += fmt.Sprintf(" at seq %d (receipt %s)", v.Broken.Seq, v.Broken.ID)
	} else if v.BrokenBatch != nil {
		msg += fmt.Sprintf(" at the chain entry ending at seq %d", v.BrokenBatch.Seq)
	}
	return errors.New(msg)
}

// loadKeys reads public keys from a file or URL holding GET /v1/signing-keys's JSON (or a bare
// array of keys); from "" it uses $AGENTMEMORY_URL. A URL without a path gets
// /v1/signing-keys.
func loadKeys(ctx context.Context, from string, cl config.Client) ([]signing.PublicKey, error) {
	if from == "" {
		from = cl.URL
	}
	if from == "" {
		return nil, errors.New("no public keys: give --keys FILE|URL (or set AGENTMEMORY_URL)")
	}
	var data []byte
	if strings.HasPrefix(from, "http://") || strings.HasPrefix(from, "https://") {
		u, err := url.Parse(from)
		if err != nil {
			return nil, fmt.Errorf("--keys: %w", err)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/signing-keys"
		}
		var raw json.RawMessage
		if err := getJSON(ctx, cliHTTP, u.String(), "", &raw); err != nil {
			return nil, err
		}
		data = raw
	} else {
		b, err := os.ReadFile(from)
		if err != nil {
			return nil, err
		}
		data = b
	}
	var list struct {
		Keys []signing.PublicKey `json:"keys"`
	}
	if err := json.Unmarshal(data, &list); err != nil || list.Keys == nil {
		if err2 := json.Unmarshal(data, &list.Keys); err2 != nil {
			return nil, fmt.Errorf("public keys: want {\"keys\": [...]} as GET /v1/signing-keys returns")
		}
	}
	return list.Keys, nil
}

// getJSON GETs u (with key as Bearer when set) and decodes a 200 answer into out.
func getJSON(ctx context.Context, hc *http.Client, u, key string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", req.URL.Path, resp.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, out)
}

// keyState says whether the key that signed is the current one or a rotated one.
func keyState(keys []signing.PublicKey, id string) string {
	for _, k := range keys {
		if k.KeyID != id {
			continue
		}
		if k.Current {
			return ", current"
		}
		if k.ValidUntil != nil {
			return ", rotated; signed until " + k.ValidUntil.Format(time.RFC3339)
		}
		return ", rotated"
	}
	return ""
}

// printDoc prints a decoded JSON object one member a line, sorted, nested objects and arrays
// indented: the certificate's own fields, whatever their shape (subject hash, stores, counts,
// times).
func printDoc(w io.Writer, v map[string]any, indent string) {
	names := make([]string, 0, len(v))
	for k := range v {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		switch x := v[k].(type) {
		case map[string]any:
			fmt.Fprintf(w, "%s%s:\n", indent, k)
			printDoc(w, x, indent+"  ")
		case []any:
			if len(x) == 0 {
				fmt.Fprintf(w, "%s%s: []\n", indent, k)
				continue
			}
			fmt.Fprintf(w, "%s%s:\n", indent, k)
			for _, item := range x {
				if m, ok := item.(map[string]any); ok {
					fmt.Fprintf(w, "%s  -\n", indent)
					printDoc(w, m, indent+"    ")
					continue
				}
				fmt.Fprintf(w, "%s  - %s\n", indent, scalar(item))
			}
		default:
			fmt.Fprintf(w, "%s%s: %s\n", indent, k, scalar(x))
		}
	}
}

func scalar(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
