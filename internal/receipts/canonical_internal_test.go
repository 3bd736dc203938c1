package receipts

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/signing"
)

// The direct leaf encoding (leafCanonical) gives byte for byte what encoding the document
// and canonicalising it with JCS gives, for every kind of value it accepts, and declines
// what it does not handle (LeafHash then takes the general path).
func TestLeafCanonicalMatchesJCS(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 1, 2, 345678000, time.FixedZone("x", 3600))
	strs := []string{"", "plain", `q"uote\back`, "ctl\x00\x01\x08\t\n\x0b\x0c\r\x1f\x7f", "é ü 日本 😀", "\u2028\u2029<>&"}
	for i, s := range strs {
		detail := map[string]any{}
		// As newReceipt stores them: through a JSON round trip.
		raw, _ := json.Marshal(map[string]any{"tokens": 812, "not_modified": i%2 == 0, "source_id": s, "zero": 0,
			"neg": -42, "big": int64(1) << 52, "nothing": nil, "b": s, "a_b": "x", "A": 1})
		require.NoError(t, json.Unmarshal(raw, &detail))
		r := Receipt{SpaceID: "sp_" + s, Seq: int64(i) * 1_000_003, ID: "rcpt_" + s, Kind: KindAgentMemory, Action: "block." + s,
			ActorKeyID: s, ObjectIDs: []string{"n1", s}, Detail: detail, At: at}
		got, ok := leafCanonical(r, r.ObjectIDs, r.Detail)
		require.True(t, ok, "%q", s)
		doc, err := json.Marshal(map[string]any{
			"type": "receipt", "space_id": r.SpaceID, "seq": r.Seq, "id": r.ID, "kind": r.Kind,
			"action": r.Action, "actor_key_id": r.ActorKeyID, "object_ids": r.ObjectIDs, "detail": r.Detail,
			"at": r.At.UTC().Format(timeFormat),
		})
		require.NoError(t, err)
		want, err := signing.Canonical(doc)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%q", s)
	}
	for _, d := range []map[string]any{{"ratio": 0.5}, {"list": []any{"a"}}, {"obj": map[string]any{}}, {"é": 1}, {"huge": float64(1 << 53)}} {
		_, ok := leafCanonical(Receipt{}, []string{}, d)
		require.False(t, ok, "%v", d)
	}
	_, ok := leafCanonical(Receipt{ID: "bad\xff"}, []string{}, map[string]any{})
	require.False(t, ok, "invalid UTF-8")
}

// The direct chain entry encoding (Batch.canonical) gives byte for byte what encoding the
// document and canonicalising it with JCS gives, and declines invalid UTF-8.
func TestBatchCanonicalMatchesJCS(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 1, 2, 345678000, time.FixedZone("x", -7200))
	for i, s := range []string{"", "sp_plain", `q"uote\back`, "ctl\x00\x1f\x7f", "é 日本 😀", "\u2028<>&"} {
		b := Batch{SpaceID: s, Seq: int64(i) * 1_000_003, FirstSeq: int64(i) - 1, Root: "r" + s, PrevHash: Genesis + s, At: at}
		got, ok := b.canonical()
		require.True(t, ok, "%q", s)
		doc, err := json.Marshal(map[string]any{
			"type": "receipt_batch", "space_id": b.SpaceID, "seq": b.Seq, "first_seq": b.FirstSeq,
			"root": b.Root, "prev_hash": b.PrevHash, "at": b.At.UTC().Format(timeFormat),
		})
		require.NoError(t, err)
		want, err := signing.Canonical(doc)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%q", s)
	}
	_, ok := Batch{SpaceID: "bad\xff"}.canonical()
	require.False(t, ok, "invalid UTF-8")
}

// A record's leaf hash from its split document (newRecord, in the request's goroutine) is
// LeafHash's at every seq, including for details holding a "seq" key; a receipt the direct
// encoding declines keeps LeafHash.
func TestRecordLeafHashMatchesLeafHash(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 1, 2, 345678000, time.UTC)
	for _, e := range []Entry{
		{Kind: KindAgentMemory, Action: "block.read", ActorKey: "key_1", ObjectIDs: []string{"n1", `],"seq":0,"space_id":`}},
		{Kind: KindAgentMemory, Action: "search", Detail: map[string]any{"seq": 0, "space_id": "x", "n": 3}},
		{Kind: KindAgentMemory, Action: "x", Detail: map[string]any{"ratio": 0.5}},
	} {
		rec, err := newRecord(nil, `sp_"a"`, e, at)
		require.NoError(t, err)
		require.Equal(t, e.Detail["ratio"] == nil, rec.leaf != nil, "%+v", e)
		for _, seq := range []int64{0, 1, 9, 10, 123456789} {
			r := rec.r
			r.Seq = seq
			require.Equal(t, r.LeafHash(), rec.leafHash(seq), "%+v at %d", e, seq)
		}
	}
}

// The direct encodings of a detail and of object ids (encodeDetail, encodeIDs) give byte for
// byte what json.Marshal gives, and the detail's values are what json.Unmarshal gives back;
// what they do not handle is declined (newReceipt then takes the general path).
func TestEncodeDetailMatchesJSON(t *testing.T) {
	for _, d := range []map[string]any{
		{},
		{"tokens": 812, "not_modified": true, "source_id": "bench-bot"},
		{"zero": 0, "neg": -42, "big": int64(1)<<53 - 1, "small": -(int64(1)<<53 - 1), "f": 3.0, "nothing": nil, "no": false},
		{"Z": "a b:c/d_e.f~", "a": "", "B": 1, "a_b": "x", "ab": "y"},
	} {
		got, decoded, ok := encodeDetail(d)
		require.True(t, ok, "%v", d)
		want, err := json.Marshal(d)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		back := map[string]any{}
		require.NoError(t, json.Unmarshal(want, &back))
		require.Equal(t, back, decoded)
	}
	for _, d := range []map[string]any{
		{"s": "<b>"}, {"s": "a&b"}, {"s": `q"`}, {"s": `b\`}, {"s": "tab\t"}, {"s": "é"}, {"s": "\x7f"}, {"é": 1}, {"<": 1},
		{"n": int64(1) << 53}, {"n": -(int64(1) << 53)}, {"n": 1 << 53}, {"f": 0.5}, {"f": math.Copysign(0, -1)}, {"f": float64(1 << 53)},
		{"u": uint(1)}, {"i": int32(1)}, {"l": []any{}}, {"o": map[string]any{}},
	} {
		_, _, ok := encodeDetail(d)
		require.False(t, ok, "%v", d)
	}
	for _, ids := range [][]string{{}, {"note_1"}, {"note_01", "note_02", "a b"}} {
		got, ok := encodeIDs(ids)
		require.True(t, ok, "%v", ids)
		want, err := json.Marshal(ids)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	for _, ids := range [][]string{{"<"}, {"ok", `q"`}, {"é"}} {
		_, ok := encodeIDs(ids)
		require.False(t, ok, "%v", ids)
	}
}

// A receipt's stored detail and object ids, and its detail's values, are the same whether
// newReceipt encodes them directly or through encoding/json.
func TestNewReceiptStoresWhatJSONStores(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 1, 2, 345678000, time.UTC)
	for _, e := range []Entry{
		{Kind: KindAgentMemory, Action: "block.read", ObjectIDs: []string{"note_1", "note_2"},
			Detail: map[string]any{"tokens": 812, "not_modified": true, "source_id": "bench-bot"}},
		{Kind: KindAgentMemory, Action: "search", Detail: map[string]any{"q": "<b>", "n": 3}, ObjectIDs: []string{"é"}},
		{Kind: KindAdmin, Action: "x"},
	} {
		r, row, err := newReceipt("sp_1", e, at)
		require.NoError(t, err)
		ids := e.ObjectIDs
		if ids == nil {
			ids = []string{}
		}
		detail := e.Detail
		if detail == nil {
			detail = map[string]any{}
		}
		wantDetail, err := json.Marshal(detail)
		require.NoError(t, err)
		wantIDs, err := json.Marshal(ids)
		require.NoError(t, err)
		require.Equal(t, string(wantDetail), row.Detail)
		require.Equal(t, string(wantIDs), row.ObjectIDs)
		back := map[string]any{}
		require.NoError(t, json.Unmarshal(wantDetail, &back))
		require.Equal(t, back, r.Detail)
	}
}

// appendJCSScalar writes each detail value it handles in JCS form and declines the rest.
func TestAppendJCSScalar(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
		ok   bool
	}{
		{nil, "null", true},
		{true, "true", true},
		{false, "false", true},
		{"a\"b", `"a\"b"`, true},
		{float64(-42), "-42", true},
		{float64(1<<53 - 1), "9007199254740991", true},
		{float64(1 << 53), "", false},
		{0.5, "", false},
		{"bad\xff", "", false},
		{int64(1), "", false},
		{[]any{}, "", false},
	} {
		got, ok := appendJCSScalar(nil, c.v)
		require.Equal(t, c.ok, ok, "%#v", c.v)
		if ok {
			require.Equal(t, c.want, string(got), "%#v", c.v)
		}
	}
}
