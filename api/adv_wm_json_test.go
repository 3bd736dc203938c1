package api_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// keyStart is the first letter of a member name (or of a string in an array after a comma).
var keyStart = regexp.MustCompile(`([{,]\s*)"([A-Za-z_])`)

// escapeNames writes the first letter of every member name as a \u escape: the same JSON to
// the exact path, which the fast path (plain names only) always hands over.
func escapeNames(body string) string {
	return keyStart.ReplaceAllStringFunc(body, func(m string) string {
		i := strings.LastIndexByte(m, '"')
		return m[:i] + fmt.Sprintf(`"\u%04x`, m[i+1])
	})
}

// Adversarial (issue 16): tricky JSON through the working-memory routes. Each body is sent
// as it is (the fast path's shape) and with every member name escaped (only the exact path
// reads that): the answers are the same — status, error code and member, stored or not,
// undeclared fields — and so are the states read back.
func TestWMFastPathAnswersAsTheExactPath(t *testing.T) {
	deep := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	fields := `"count":1`
	for i := 0; i < 18; i++ {
		fields += fmt.Sprintf(`,"extra%d":%d`, i, i)
	}
	cases := []string{
		`{"scope":@SC,"body":{"count":-0}}`,
		`{"scope":@SC,"body":{"count":1e0}}`,
		`{"scope":@SC,"body":{"count":1.0}}`,
		`{"scope":@SC,"body":{"price":1e400}}`,
		`{"scope":@SC,"body":{"price":1e-400}}`,
		`{"scope":@SC,"body":{"price":-0.0,"count":-9223372036854775808}}`,
		`{"scope":@SC,"body":{"count":9223372036854775808}}`,
		`{"scope":@SC,"body":{"count":01}}`,
		`{"scope":@SC,"body":{"count":"1"}}`,
		`{"scope":@SC,"body":{"offer":"a\u0000b"}}`,
		`{"scope":@SC,"body":{"offer":"\ud800"}}`,
		`{"scope":@SC,"body":{"offer":"\udc00\ud800"}}`,
		`{"scope":@SC,"body":{"offer":"\ud83d\ude00 ok"}}`,
		`{"scope":@SC,"body":{"offer":"é ✓"}}`,
		`{"scope":@SC,"body":{"offer":"a\/b\"c\\d\u00e9"}}`,
		"{\"scope\":@SC,\"body\":{\"offer\":\"tab\there\"}}",
		"{\"scope\":@SC,\"body\":{\"offer\":\"bad \xff byte\"}}",
		"{\"scope\":@SC,\"body\":{\"offer\":\"cesu \xed\xa0\x80\"}}",
		`{"scope":@SC,"body":{"offer":"x"},"body":{"offer":"y"}}`,
		`{"scope":@SC,"body":{"offer":"x","offer":"y"}}`,
		`{"scope":@SC,"body":{"offer":"x","o\u0066fer":"y"}}`,
		`{"scope":@SC,"body":{"count":1,"count ":2}}`,
		`{"scope":@SC,"body":{"Count":1}}`,
		`{"scope":@SC,"body":{` + fields + `}}`,
		`{"scope":@SC,"body":{` + fields + `,"extra3":9}}`,
		`{"scope":@SC,"mode":"cas","if_version":-0,"body":{"count":2}}`,
		`{"scope":@SC,"mode":"cas","if_version":0.0,"body":{"count":2}}`,
		`{"scope":@SC,"mode":"cas","if_version":1e0,"body":{"count":2}}`,
		`{"scope":@SC,"mode":"cas","if_version":9223372036854775808,"body":{"count":2}}`,
		`{"scope":@SC,"mode":"CAS","if_version":0,"body":{"count":2}}`,
		`{"scope":@SC,"agent":null,"mode":null,"subject":null,"if_version":null,"body":{"count":3}}`,
		`{"scope":@SC,"agent":"shop-bot","body":{"count":3}}`,
		`{"scope":@SC,"agent":"shop\u002dbot","body":{"count":3}}`,
		`{"scope":@SC,"agent":"shop-bot\u0000","body":{"count":3}}`,
		`{"Scope":@SC,"body":{"count":3}}`,
		`{"scope":@SC,"body":{"count":3},"SCOPE":@SC}`,
		`{"scope":@SC,"Body":{"count":3}}`,
		`{"scope":{"kind":"conversation","id":"@S","extra":1},"body":{"count":1}}`,
		`{"scope":{"kind":"conversation","id":7},"body":{"count":1}}`,
		`{"scope":{"kind":"Conversation","id":"@S"},"body":{"count":1}}`,
		`{"scope":{"kind":"conversation","ID":"@S"},"body":{"count":1}}`,
		`{"scope":null,"body":{"count":1}}`,
		`{"scope":@SC,"body":{"flag":true,"tags":[1,"a",null,{"x":-0}],"cart":{"n":1.50,"m":[]}}}`,
		`{"scope":@SC,"body":{"step":"greet"}}`,
		`{"scope":@SC,"body":{"step":"Greet"}}`,
		`{"scope":@SC,"body":{"cart":` + deep(62) + `}}`,
		`{"scope":@SC,"body":{"cart":` + deep(63) + `}}`,
		`{"scope":@SC,"body":{"cart":` + deep(80) + `}}`,
		"\ufeff{\"scope\":@SC,\"body\":{\"count\":3}}",
		"{\"scope\":@SC,\"body\":{\"count\":3}}\x00",
		`{"scope":@SC,"body":{"count":3}} x`,
		`{"scope":@SC,"body":{"count":3}}{}`,
		`{"scope":@SC,"body":{"count":3},}`,
		"\f{\"scope\":@SC,\"body\":{\"count\":3}}",
		"{\"scope\":@SC,\"body\":{\"count\":3}}\u00a0",
		" \t\r\n{\"scope\" : @SC , \"body\" : { \"count\" : 3 , \"offer\" : \"s p\" } } \n",
		`{"scope":@SC,"body":{}}`,
		`{"scope":@SC,"body":{"count":null}}`,
		`{"scope":@SC,"body":{"count":{"$delete":true}}}`,
		`{"scope":@SC,"body":{"count":true}}`,
		`{"scope":@SC,"body":{"count":tru}}`,
	}
	require.Equal(t, `{"\u0061b":1, "\u0063d":[1,"\u0078"]}`, escapeNames(`{"ab":1, "cd":[1,"x"]}`))
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		statuses := map[any]int{}
		for i, tc := range cases {
			answers := make([]map[string]any, 2)
			reads := make([]string, 2)
			for v, prefix := range []string{"q", "e"} {
				id := fmt.Sprintf("%s-%d", prefix, i)
				body := strings.ReplaceAll(strings.ReplaceAll(tc, "@SC", `{"kind":"conversation","id":"@S"}`), "@S", id)
				if v == 1 {
					body = escapeNames(body)
				}
				r := e.Do(http.MethodPut, "/v1/agent-state", key, body)
				a := map[string]any{"status": r.Status}
				if r.Status == http.StatusOK {
					m := r.JSON(t)
					a["stored"], a["reason"], a["fields"], a["version"] = m["stored"], m["reason"], m["fields"], m["version"]
				} else if r.Status == http.StatusBadRequest {
					m := r.JSON(t)["error"].(map[string]any)
					a["code"], a["member"] = m["code"], m["member"]
				}
				answers[v] = a
				got := e.MustDo(http.StatusOK, http.MethodPost, "/v1/agent-state/read", key,
					map[string]any{"scope": conv(id)}).JSON(t)
				reads[v] = fmt.Sprint(got["body"], " ", got["version"])
			}
			require.Equal(t, answers[1], answers[0], "case %d: %q", i, tc)
			statuses[fmt.Sprint(answers[0]["status"], answers[0]["stored"])]++
			require.Equal(t, reads[1], reads[0], "case %d: %q", i, tc)
		}
		// The read route: the same comparison on the state written by the first case.
		for _, tc := range []string{`{"scope":@SC}`, `{"scope":@SC,"agent":null}`, `{"scope":@SC,"agent":"shop-bot"}`,
			`{"scope":@SC,"agent":"other"}`, `{"scope":@SC,"Agent":"shop-bot"}`, `{"scope":@SC,"scope":@SC}`, `{"scope":@SC,"if_version":1}`,
			`{"scope":{"kind":"conversation","id":"q-0","id":"q-1"}}`, `{"scope":null}`, `{"scope":[]}`, `{"scope":@SC} 1`, `{"scope":@SC,"agent":"\ud800"}`} {
			var got []string
			for _, body := range []string{tc, escapeNames(tc)} {
				r := e.Do(http.MethodPost, "/v1/agent-state/read", key, strings.ReplaceAll(body, "@SC", `{"kind":"conversation","id":"q-0"}`))
				answer := fmt.Sprint(r.Status, " ", string(r.Body))
				if r.Status != http.StatusOK { // messages give byte offsets, which the escapes move
					m, _ := r.JSON(t)["error"].(map[string]any)
					answer = fmt.Sprint(r.Status, " ", m["code"], " ", m["member"])
				}
				got = append(got, answer)
			}
			require.Equal(t, got[1], got[0], "read %q", tc)
		}
		t.Logf("answers: %v", statuses)
		require.Greater(t, statuses["200 true"], 10)
		require.Greater(t, statuses["400 <nil>"], 20)
	})
}
