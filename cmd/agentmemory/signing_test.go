package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/receipts/receiptstest"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/models"
)

// signedEnv is an API with a signing key behind a real HTTP server.
type signedEnv struct {
	*apptest.Env
	signer *signing.Signer
	srv    *httptest.Server
}

func newSignedEnv(t *testing.T, e *apptest.Env) signedEnv {
	t.Helper()
	seed, _, err := signing.GenerateKey()
	require.NoError(t, err)
	priv, err := signing.ParsePrivateKey(seed)
	require.NoError(t, err)
	s, err := signing.NewSigner(priv, time.Time{})
	require.NoError(t, err)
	deps := e.Deps
	deps.Signer = s
	e.Server = api.NewServer(deps)
	srv := httptest.NewServer(e.Server)
	t.Cleanup(srv.Close)
	return signedEnv{Env: e, signer: s, srv: srv}
}

// cli runs the agentmemory command line with env as its environment.
func cli(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
	return out.String(), err
}

// save writes the 200 answer of GET path to a file and returns its path.
func (s signedEnv) save(t *testing.T, path, name string) string {
	t.Helper()
	r := s.MustDo(http.StatusOK, "GET", path, s.AdminKey, nil)
	file := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(file, r.Body, 0o600))
	return file
}

func TestVerifyCertificateCommand(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		s := newSignedEnv(t, e)
		// Stored as Certify issues it: canonical, signed then.
		cert, err := signing.Canonical([]byte(`{"type":"erasure_certificate","erasure_id":"er_1","subject_hash":"5f1c",` +
			`"stores":[{"store":"state","removed":3,"probe":0},{"store":"turns","removed":2,"probe":0,"backups":"shredded"}],"total":5,"ended_at":"2026-12-01T12:00:03Z"}`))
		require.NoError(t, err)
		sig, err := s.signer.Sign(cert)
		require.NoError(t, err)
		sigJSON, err := json.Marshal(sig)
		require.NoError(t, err)
		_, err = s.DB.NewInsert().Model(&models.Erasure{ID: "er_1", SpaceID: s.SpaceID, TargetKind: "subject", TargetHash: "th",
			ScopeHashes: "[]", ProfileIDs: "[]", Items: "[]", Status: "completed", RequestedBy: "key_1", Certificate: string(cert),
			CertificateSignature: string(sigJSON), CreatedAt: time.Now()}).Exec(context.Background())
		require.NoError(t, err)
		file := s.save(t, "/v1/erasures/er_1/certificate", "cert.json")
		keysFile := s.save(t, "/v1/signing-keys", "keys.json")

		// Against the published keys by URL, by file, and through AGENTMEMORY_URL.
		for _, tc := range []struct {
			args []string
			env  map[string]string
		}{
			{[]string{"verify-certificate", file, "--keys", s.srv.URL}, nil},
			{[]string{"verify-certificate", file, "--keys", s.srv.URL + "/v1/signing-keys"}, nil},
			{[]string{"verify-certificate", file, "--keys", keysFile}, nil},
			{[]string{"verify-certificate", file}, map[string]string{"AGENTMEMORY_URL": s.srv.URL}},
		} {
			out, err := cli(t, tc.env, tc.args...)
			require.NoError(t, err, "%v", tc.args)
			require.Contains(t, out, "signature: valid (Ed25519, key "+s.signer.KeyID()+", current)")
			require.Contains(t, out, `subject_hash: "5f1c"`)
			require.Contains(t, out, `store: "turns"`)
			require.Contains(t, out, `removed: 3`)
			require.Contains(t, out, `backups: "shredded"`, "how a store's entries are gone from backups is shown (issue 29 §1)")
			require.Contains(t, out, `ended_at: "2026-12-01T12:00:03Z"`)
		}

		// One changed byte (a count) fails, and so does a key list without the signing key.
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		changed := bytes.Replace(data, []byte(`"removed":3`), []byte(`"removed":4`), 1)
		require.NotEqual(t, data, changed)
		bad := filepath.Join(t.TempDir(), "changed.json")
		require.NoError(t, os.WriteFile(bad, changed, 0o600))
		_, err = cli(t, nil, "verify-certificate", bad, "--keys", keysFile)
		require.ErrorContains(t, err, "does NOT verify")
		require.ErrorIs(t, err, signing.ErrBadSignature)

		other := filepath.Join(t.TempDir(), "other-keys.json")
		require.NoError(t, os.WriteFile(other, []byte(`{"keys":[]}`), 0o600))
		_, err = cli(t, nil, "verify-certificate", file, "--keys", other)
		require.ErrorIs(t, err, signing.ErrUnknownKey)

		// A signed head is not a certificate, even renamed: the type is inside what is signed.
		head := s.save(t, "/v1/receipts/head", "head.json")
		_, err = cli(t, nil, "verify-certificate", head, "--keys", keysFile)
		require.ErrorContains(t, err, "not a certificate")
		headData, err := os.ReadFile(head)
		require.NoError(t, err)
		renamed := filepath.Join(t.TempDir(), "renamed.json")
		require.NoError(t, os.WriteFile(renamed, bytes.Replace(headData, []byte(`{"head":`), []byte(`{"certificate":`), 1), 0o600))
		_, err = cli(t, nil, "verify-certificate", renamed, "--keys", keysFile)
		require.ErrorContains(t, err, "not an erasure certificate")

		// A member given twice is refused, whichever copy a reader would keep.
		twice := filepath.Join(t.TempDir(), "twice.json")
		require.NoError(t, os.WriteFile(twice, append([]byte(`{"certificate":{"type":"erasure_certificate","total":999},`), data[1:]...), 0o600))
		_, err = cli(t, nil, "verify-certificate", twice, "--keys", keysFile)
		require.ErrorContains(t, err, "appears twice")
	})
}

// A chain rewritten with recomputed hashes verifies alone but fails against the older signed
// head, through the API and straight from the database (both DBs).
func TestReceiptsVerifySinceHeadCommand(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		s := newSignedEnv(t, e)
		for _, agent := range []string{"a", "b", "c"} {
			s.MustDo(http.StatusCreated, "POST", "/v1/keys", s.AdminKey, map[string]any{"kind": "agent", "agent": agent, "vendor": "v", "scopes": []string{"context"}})
		}
		head := s.save(t, "/v1/receipts/head", "head.json")
		keysFile := s.save(t, "/v1/signing-keys", "keys.json")
		s.MustDo(http.StatusCreated, "POST", "/v1/keys", s.AdminKey, map[string]any{"kind": "agent", "agent": "d", "vendor": "v", "scopes": []string{"context"}})

		viaAPI := []string{"receipts", "verify", "--url", s.srv.URL, "--key", s.AdminKey, "--keys", keysFile}
		out, err := cli(t, nil, append(viaAPI, "--since-head", head)...)
		require.NoError(t, err)
		require.Contains(t, out, "signed head: valid signature")
		require.Contains(t, out, "it extends the signed head")

		// The database mode reads the same chain (the head names the space).
		dbEnv := map[string]string{"DATABASE_URL": dbURL(t, s)}
		_, err = cli(t, dbEnv, "receipts", "verify", "--since-head", head, "--keys", keysFile)
		require.NoError(t, err)

		// An operator rewrites receipt 2 and recomputes every later hash and the head.
		rewriteChain(t, s.Env, 2)
		out, err = cli(t, nil, viaAPI...)
		require.NoError(t, err, "the rewritten chain is consistent on its own")
		require.Contains(t, out, "chain: ok")
		_, err = cli(t, nil, append(viaAPI, "--since-head", head)...)
		require.ErrorContains(t, err, receipts.ReasonHeadRewritten)
		_, err = cli(t, dbEnv, "receipts", "verify", "--since-head", head, "--keys", keysFile)
		require.ErrorContains(t, err, receipts.ReasonHeadRewritten)

		// A changed byte in the signed head file fails before any walk.
		data, err := os.ReadFile(head)
		require.NoError(t, err)
		forged := filepath.Join(t.TempDir(), "forged.json")
		require.NoError(t, os.WriteFile(forged, bytes.Replace(data, []byte(`"seq":`), []byte(`"seq":1`), 1), 0o600))
		_, err = cli(t, nil, append(viaAPI, "--since-head", forged)...)
		require.ErrorContains(t, err, "signed head does NOT verify")
	})
}

// Issue 16: a receipt's inclusion proof, saved from GET /v1/receipts/{id}/proof, verifies
// offline; a changed receipt in the file does not (both DBs).
func TestReceiptsVerifyProofCommand(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		s := newSignedEnv(t, e)
		s.MustDo(http.StatusCreated, "POST", "/v1/keys", s.AdminKey, map[string]any{"kind": "agent", "agent": "a", "vendor": "v", "scopes": []string{"context"}})
		page := s.MustDo(http.StatusOK, "GET", "/v1/receipts?limit=1000", s.AdminKey, nil).JSON(t)
		list := page["receipts"].([]any)
		id := list[len(list)-1].(map[string]any)["id"].(string)
		proof := s.save(t, "/v1/receipts/"+id+"/proof", "proof.json")
		out, err := cli(t, nil, "receipts", "verify-proof", proof)
		require.NoError(t, err)
		require.Contains(t, out, "proof: valid; receipt "+id)

		data, err := os.ReadFile(proof)
		require.NoError(t, err)
		forged := filepath.Join(t.TempDir(), "forged.json")
		require.NoError(t, os.WriteFile(forged, bytes.Replace(data, []byte(`"action":"key.create"`), []byte(`"action":"key.revoke"`), 1), 0o600))
		_, err = cli(t, nil, "receipts", "verify-proof", forged)
		require.ErrorContains(t, err, "proof does NOT verify")
	})
}

// dbURL is the URL of the env's database, for the CLI's database mode.
func dbURL(t *testing.T, s signedEnv) string {
	t.Helper()
	ctx := context.Background()
	if s.Engine == "sqlite" {
		var seq int
		var name, file string
		require.NoError(t, s.DB.QueryRowContext(ctx, "PRAGMA database_list").Scan(&seq, &name, &file))
		require.NotEmpty(t, file)
		return "sqlite://" + file
	}
	var schema string
	require.NoError(t, s.DB.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema))
	return dbtest.PostgresURL() + "&search_path=" + schema
}

// rewriteChain changes the detail of receipt seq of the env's space and recomputes every later
// hash and link and the head row: what write access to the database allows.
func rewriteChain(t *testing.T, e *apptest.Env, seq int64) {
	t.Helper()
	require.NoError(t, receiptstest.Rewrite(context.Background(), e.DB, e.SpaceID, seq, map[string]any{"rewritten": true}))
}

// Issue 32: `receipts verify` (through the API and on the database) fails a chain whose read
// receipt names a manifest that was changed afterwards: what the read delivered no longer
// is what its receipt names (both DBs).
func TestReceiptsVerifyCatchesChangedManifest(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		s := newSignedEnv(t, e)
		m := receipts.NewManifest(receipts.ManifestBlock, "", nil, 800, []receipts.ManifestItem{{ID: "note_a", Version: 1}})
		require.NoError(t, receipts.Record(t.Context(), nil, s.DB, s.SpaceID, receipts.Entry{Kind: receipts.KindAgentMemory,
			Action: "block.read", ActorKey: "key_x", Manifest: m}, time.Now()))
		head := s.save(t, "/v1/receipts/head", "head.json")
		keysFile := s.save(t, "/v1/signing-keys", "keys.json")
		viaAPI := []string{"receipts", "verify", "--url", s.srv.URL, "--key", s.AdminKey, "--keys", keysFile}
		out, err := cli(t, nil, viaAPI...)
		require.NoError(t, err)
		require.Contains(t, out, "chain: ok")
		dbEnv := map[string]string{"DATABASE_URL": dbURL(t, s)}
		_, err = cli(t, dbEnv, "receipts", "verify", "--since-head", head, "--keys", keysFile)
		require.NoError(t, err)

		_, err = s.DB.ExecContext(t.Context(), "UPDATE receipt_manifests SET body = REPLACE(body, 'note_a', 'note_b')")
		require.NoError(t, err)
		_, err = cli(t, nil, viaAPI...)
		require.ErrorContains(t, err, receipts.ReasonManifestMismatch)
		_, err = cli(t, dbEnv, "receipts", "verify", "--since-head", head, "--keys", keysFile)
		require.ErrorContains(t, err, receipts.ReasonManifestMismatch)
	})
}
