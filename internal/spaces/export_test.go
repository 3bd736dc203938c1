package spaces

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/fault"
)

// Issue 33: features export.sinks parses and names a bad member.
func TestFeaturesExportSinks(t *testing.T) {
	f, err := ParseFeatures([]byte(`{"export": {"sinks": [{"name": "lake", "kind": "directory"},
		{"name": "s3-lake", "kind": "bucket", "url": "s3://acme-export?region=eu-west-1"},
		{"name": "stream", "kind": "kafka"}, {"name": "stream-2", "kind": "kafka", "topic_prefix": "acme.export"}]}}`))
	require.NoError(t, err)
	require.Len(t, f.Export.Sinks, 4)
	require.Equal(t, DefaultTopicPrefix, f.Export.Sinks[2].Topics())
	require.Equal(t, "acme.export", f.Export.Sinks[3].Topics())

	bad := []struct{ name, doc, member string }{
		{"bad name", `{"export": {"sinks": [{"name": "Lake", "kind": "directory"}]}}`, "export.sinks[0].name"},
		{"twice", `{"export": {"sinks": [{"name": "a", "kind": "directory"}, {"name": "a", "kind": "kafka"}]}}`, "export.sinks[1].name"},
		{"kind", `{"export": {"sinks": [{"name": "a", "kind": "ftp"}]}}`, "export.sinks[0].kind"},
		{"file url", `{"export": {"sinks": [{"name": "a", "kind": "bucket", "url": "file:///etc"}]}}`, "export.sinks[0].url"},
		{"credentials", `{"export": {"sinks": [{"name": "a", "kind": "bucket", "url": "s3://k:s@b"}]}}`, "export.sinks[0].url"},
		{"directory with url", `{"export": {"sinks": [{"name": "a", "kind": "directory", "url": "s3://b"}]}}`, "export.sinks[0]"},
		{"kafka url", `{"export": {"sinks": [{"name": "a", "kind": "kafka", "url": "s3://b"}]}}`, "export.sinks[0].url"},
		{"topic", `{"export": {"sinks": [{"name": "a", "kind": "kafka", "topic_prefix": "a b"}]}}`, "export.sinks[0].topic_prefix"},
	}
	for _, tc := range bad {
		_, err := ParseFeatures([]byte(tc.doc))
		fe := fault.As(err)
		require.NotNil(t, fe, "%s: got %v, want a fault", tc.name, err)
		require.Equal(t, fault.Invalid, fe.Kind, tc.name)
		require.Equal(t, tc.member, fe.Details["member"], tc.name)
	}
	_, err = ParseFeatures([]byte(`{"export": {"sinks": [{"name": "a", "kind": "kafka", "brokers": ["x:1"]}]}}`))
	require.Error(t, err, "unknown members are refused")
}
