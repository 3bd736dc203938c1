package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/signing"
)

// TestSigningKeyVariables: a malformed signing key is refused naming the variable and never
// echoing the value; a valid seed and previous keys load.
func TestSigningKeyVariables(t *testing.T) {
	seed, pub, err := signing.GenerateKey()
	require.NoError(t, err)
	cfg, err := config.Load(lookup(map[string]string{
		"AGENTMEMORY_SIGNING_KEY":           seed,
		"AGENTMEMORY_SIGNING_KEYS_PREVIOUS": pub + "@2026-11-01T00:00:00Z," + pub,
	}))
	require.NoError(t, err)
	require.Equal(t, seed, cfg.SigningKey)

	secretish := "c2VjcmV0LXZhbHVlLXRoYXQtaXMtdG9vLXNob3J0"
	_, err = config.Load(lookup(map[string]string{"AGENTMEMORY_SIGNING_KEY": secretish}))
	require.Error(t, err)
	require.Contains(t, err.Error(), "AGENTMEMORY_SIGNING_KEY")
	require.NotContains(t, err.Error(), secretish, "got the key in the error, want it never shown")

	_, err = config.Load(lookup(map[string]string{"AGENTMEMORY_SIGNING_KEYS_PREVIOUS": pub + "@last-week"}))
	require.Error(t, err)
	require.Contains(t, err.Error(), "AGENTMEMORY_SIGNING_KEYS_PREVIOUS")
}
