package main

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The web UI port: a free asked port is kept; a busy one is an error when given by flag and is
// replaced by a free port (said in the note) when it is the default; 0 picks a free port.
func TestPickUIPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port

	_, _, err = pickUIPort(busy, true)
	require.ErrorContains(t, err, "--temporal-ui-port")

	p, note, err := pickUIPort(busy, false)
	require.NoError(t, err)
	require.NotEqual(t, busy, p)
	require.Contains(t, note, strconv.Itoa(busy)+" is busy")

	free, err := freePort()
	require.NoError(t, err)
	p, note, err = pickUIPort(free, true)
	require.NoError(t, err)
	require.Equal(t, free, p)
	require.Empty(t, note)

	p, _, err = pickUIPort(0, false)
	require.NoError(t, err)
	require.NotZero(t, p)

	_, _, err = pickUIPort(70000, true)
	require.Error(t, err)
}
