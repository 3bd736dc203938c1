package netguard_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/netguard"
)

func TestBlocked(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0",
		"224.0.0.1", "::1", "::", "fe80::1", "fd00:ec2::254", "::ffff:127.0.0.1", "100.64.0.1", "255.255.255.255"} {
		require.True(t, netguard.Blocked(netip.MustParseAddr(s)), "%s should be blocked", s)
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "2606:4700::1111"} {
		require.False(t, netguard.Blocked(netip.MustParseAddr(s)), "%s should be allowed", s)
	}
}

func TestCheckURL(t *testing.T) {
	for _, u := range []string{"ftp://example.com/x", "https://user:pw@example.com/", "http://127.0.0.1:8080/",
		"http://[::1]/", "http://169.254.169.254/latest/meta-data", "http://localhost/", "http://a.localhost./",
		"http://10.0.0.1/", "http://0.0.0.0/", "http:///nohost", "gopher://x"} {
		require.Error(t, netguard.CheckURL(u, false), u)
	}
	require.NoError(t, netguard.CheckURL("https://hooks.example.com/in?token=x", false))
	require.NoError(t, netguard.CheckURL("http://127.0.0.1:9999/", true))
	require.Error(t, netguard.CheckURL("https://u:p@127.0.0.1/", true), "credentials are refused even when private is allowed")
	require.NoError(t, netguard.Control("tcp", "93.184.216.34:443", nil))
	require.ErrorIs(t, netguard.Control("tcp", "127.0.0.1:80", nil), netguard.ErrPrivate)
	require.ErrorIs(t, netguard.Control("tcp6", "[::ffff:10.0.0.1]:80", nil), netguard.ErrPrivate)
}
