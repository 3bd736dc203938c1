package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/signing"
)

// dev generates a signing key in the data dir once and keeps it; serve without
// AGENTMEMORY_SIGNING_KEY has no signer, even beside dev's key file (the signed routes answer 503); AGENTMEMORY_SIGNING_KEY wins.
func TestOpenSigner(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Config{DataDir: dir}
	none, err := openSigner(cfg, false)
	require.NoError(t, err)
	require.Nil(t, none)

	dev, err := openSigner(cfg, true)
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(dir, SigningKeyFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	again, err := openSigner(cfg, true)
	require.NoError(t, err)
	require.Equal(t, dev.KeyID(), again.KeyID(), "the generated key is kept across restarts")
	none, err = openSigner(cfg, false)
	require.NoError(t, err)
	require.Nil(t, none, "serve never signs with the key file dev left in the data dir")

	seed, pub, err := signing.GenerateKey()
	require.NoError(t, err)
	cfg.SigningKey = seed
	cfg.SigningKeysPrevious = pub
	own, err := openSigner(cfg, true)
	require.NoError(t, err)
	require.NotEqual(t, dev.KeyID(), own.KeyID())
	require.Len(t, own.Keys(), 1, "a previous key equal to the current one is listed once")
}
