package knowledge_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

func docIDsOf(res map[string]any) []string {
	var out []string
	for _, c := range chunksOf(res) {
		if id := c["document_id"].(string); !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// TestReadGrants (KN-1, MS-2): a base is read by the agents its grants name (the whole space,
// an agent, a vendor) and by person keys; a base created without readers is read by no agent.
// A request cannot widen the grants: naming a base not granted, alone or beside granted ones,
// is 404 as a missing base; filters naming its documents find nothing; members that try to
// name a base or space inside filters are 400; the store's own query (chunkScope) returns
// nothing of a base not granted even when asked for it directly. Document lists and statuses
// follow the same grants for read-only agents. An admin changes grants, receipted.
func TestReadGrants(t *testing.T) {
	each(t, func(t *testing.T, r *rig) {
		ctx := context.Background()
		open := r.base(t, "open", map[string]any{"readers": map[string]any{"space": true}})
		vendor := r.base(t, "vendor", map[string]any{"readers": map[string]any{"vendors": []string{"acme"}}})
		named := r.base(t, "named", map[string]any{"readers": map[string]any{"agents": []string{"support-bot"}}})
		closed := r.base(t, "closed", map[string]any{"readers": nil})
		resp := r.MustDo(http.StatusOK, "GET", "/v1/knowledge", r.AdminKey, nil).JSON(t)
		for _, b := range resp["bases"].([]any) {
			if b.(map[string]any)["id"] == closed {
				require.Equal(t, map[string]any{"space": false, "agents": []any{}, "vendors": []any{}}, b.(map[string]any)["settings"].(map[string]any)["readers"], "the default grants no agent")
			}
		}
		docs := map[string]string{}
		for _, kb := range []string{open, vendor, named, closed} {
			docs[kb] = r.ingest(t, kb, knowledge.SubmitRequest{Text: "Gift cards are mailed within seven days.", SourceURI: "kb://gift"}).ID
		}
		support := r.AgentKey("support-bot", "acme", "knowledge:read")
		sibling := r.AgentKey("billing-bot", "acme", "knowledge:read")
		stranger := r.AgentKey("helper", "globex", "knowledge:read")
		loader := r.AgentKey("loader-bot", "acme", "knowledge:write")
		integ := r.PersonKey("integrator", auth.RoleIntegration)
		q := func(kbs ...string) map[string]any { return map[string]any{"query": "gift cards mailed", "kbs": kbs} }
		cases := []struct {
			key  string
			kb   string
			want int
		}{
			{support, open, http.StatusOK}, {support, vendor, http.StatusOK}, {support, named, http.StatusOK}, {support, closed, http.StatusNotFound},
			{sibling, open, http.StatusOK}, {sibling, vendor, http.StatusOK}, {sibling, named, http.StatusNotFound}, {sibling, closed, http.StatusNotFound},
			{stranger, open, http.StatusOK}, {stranger, vendor, http.StatusNotFound}, {stranger, named, http.StatusNotFound}, {stranger, closed, http.StatusNotFound},
			{r.AdminKey, closed, http.StatusOK}, {integ, closed, http.StatusOK},
		}
		for _, c := range cases {
			resp := r.MustDo(c.want, "POST", "/v1/knowledge/retrieve", c.key, q(c.kb))
			if c.want == http.StatusNotFound {
				require.Equal(t, knowledge.CodeBaseNotFound, resp.ErrorCode(t))
				continue
			}
			require.Equal(t, []string{docs[c.kb]}, docIDsOf(resp.JSON(t)))
		}
		// A base not granted beside granted ones: the whole request is refused.
		r.MustDo(http.StatusNotFound, "POST", "/v1/knowledge/retrieve", stranger, q(open, closed))
		// Filters cannot reach another base's documents, nor name a base or a space.
		got := r.retrieve(t, stranger, map[string]any{"query": "gift cards", "kbs": []string{open}, "filters": map[string]any{"document_ids": []string{docs[closed], docs[vendor]}}})
		require.Empty(t, chunksOf(got))
		for _, member := range []string{"kb_id", "kbs", "space_id", "readers"} {
			resp := r.MustDo(http.StatusBadRequest, "POST", "/v1/knowledge/retrieve", stranger, map[string]any{"query": "gift", "kbs": []string{open}, "filters": map[string]any{member: closed}})
			require.Equal(t, "unknown_member", resp.ErrorCode(t))
			require.Equal(t, "filters."+member, resp.JSON(t)["error"].(map[string]any)["member"])
		}
		// The store's query itself: asked for every base, it returns only the granted ones' chunks.
		p, err := auth.Authenticate(ctx, r.DB, stranger)
		require.NoError(t, err)
		ids, err := r.ks.ScopedChunkIDs(ctx, p, []string{open, vendor, named, closed}, nil)
		require.NoError(t, err)
		openOnly, err := r.ks.ScopedChunkIDs(ctx, r.admin, []string{open}, nil)
		require.NoError(t, err)
		require.Equal(t, openOnly, ids)
		all, err := r.ks.ScopedChunkIDs(ctx, r.admin, []string{open, vendor, named, closed}, nil)
		require.NoError(t, err)
		require.Len(t, all, 4, "person keys read every base")

		// Lists and statuses: read-only agents see the granted bases; writers see all.
		names := func(key string) []string {
			var out []string
			for _, b := range r.MustDo(http.StatusOK, "GET", "/v1/knowledge", key, nil).JSON(t)["bases"].([]any) {
				out = append(out, b.(map[string]any)["name"].(string))
			}
			return out
		}
		require.Equal(t, []string{"open"}, names(stranger))
		require.Equal(t, []string{"named", "open", "vendor"}, names(support))
		require.Equal(t, []string{"closed", "named", "open", "vendor"}, names(loader))
		require.Equal(t, knowledge.CodeBaseNotFound, r.MustDo(http.StatusNotFound, "GET", "/v1/knowledge/"+closed+"/documents", stranger, nil).ErrorCode(t))
		require.Equal(t, knowledge.CodeDocumentNotFound, r.MustDo(http.StatusNotFound, "GET", "/v1/knowledge/"+closed+"/documents/"+docs[closed], stranger, nil).ErrorCode(t))
		r.MustDo(http.StatusOK, "GET", "/v1/knowledge/"+closed+"/documents/"+docs[closed], loader, nil)
		r.MustDo(http.StatusOK, "GET", "/v1/knowledge/"+open+"/documents/"+docs[open], stranger, nil)

		// An admin grants the closed base to vendor globex, then takes it back.
		r.MustDo(http.StatusForbidden, "PUT", "/v1/knowledge/"+closed+"/readers", support, map[string]any{"space": true})
		r.MustDo(http.StatusForbidden, "PUT", "/v1/knowledge/"+closed+"/readers", integ, map[string]any{"space": true})
		bad := r.MustDo(http.StatusBadRequest, "PUT", "/v1/knowledge/"+closed+"/readers", r.AdminKey, map[string]any{"agents": []string{""}})
		require.Equal(t, "readers.agents[0]", bad.JSON(t)["error"].(map[string]any)["member"])
		b := r.MustDo(http.StatusOK, "PUT", "/v1/knowledge/"+closed+"/readers", r.AdminKey, map[string]any{"vendors": []string{"globex", "globex"}}).JSON(t)
		require.Equal(t, []any{"globex"}, b["settings"].(map[string]any)["readers"].(map[string]any)["vendors"])
		require.Equal(t, []string{docs[closed]}, docIDsOf(r.retrieve(t, stranger, q(closed))))
		require.True(t, hasReceipt(t, r, "base.readers"), "the change of grants is receipted")
		r.MustDo(http.StatusOK, "PUT", "/v1/knowledge/"+closed+"/readers", r.AdminKey, map[string]any{})
		r.MustDo(http.StatusNotFound, "POST", "/v1/knowledge/retrieve", stranger, q(closed))
		_, otherAdmin := r.NewSpace("other", true)
		r.MustDo(http.StatusOK, "PUT", "/v1/documents/features", otherAdmin, map[string]any{"knowledge": map[string]any{"enabled": true}})
		r.MustDo(http.StatusNotFound, "PUT", "/v1/knowledge/"+closed+"/readers", otherAdmin, map[string]any{"space": true})
		r.MustDo(http.StatusNotFound, "POST", "/v1/knowledge/retrieve", stranger, q(closed))
	})
}

// hasReceipt reports whether the space's chain holds a receipt of action.
func hasReceipt(t *testing.T, r *rig, action string) bool {
	all, err := receiptsOf(r)
	require.NoError(t, err)
	return slices.ContainsFunc(all, func(rc receipts.Receipt) bool { return rc.Action == action })
}

// TestRetrieveFilters (KN-4): document ids, a source URI prefix (exact characters: % and _ are
// not wildcards), a version label and a title narrow the candidates of both rankings, together
// (AND); a filter matching nothing answers no chunk; bad filters are 400 naming the member.
func TestRetrieveFilters(t *testing.T) {
	each(t, func(t *testing.T, r *rig) {
		kb := r.base(t, "handbook", nil)
		refunds := r.ingest(t, kb, knowledge.SubmitRequest{Text: "Gift cards refunds go back to the card.", SourceURI: "kb://policies/refunds", Title: "Refunds", Version: "v1"}).ID
		exchanges := r.ingest(t, kb, knowledge.SubmitRequest{Text: "Gift cards exchanges are free.", SourceURI: "kb://policies/exchanges", Title: "Exchanges", Version: "v2"}).ID
		gifts := r.ingest(t, kb, knowledge.SubmitRequest{Text: "Gift cards never expire.", SourceURI: "kb://faq/gifts", Title: "Gifts", Version: "v1"}).ID
		reader := r.AgentKey("support-bot", "acme", "knowledge:read")
		find := func(filters map[string]any) []string {
			return docIDsOf(r.retrieve(t, reader, map[string]any{"query": "gift cards", "kbs": []string{kb}, "top_k": 10, "filters": filters}))
		}
		sorted := func(ids ...string) []string { slices.Sort(ids); return ids }
		require.Equal(t, sorted(refunds, exchanges, gifts), find(nil))
		require.Equal(t, sorted(refunds, exchanges, gifts), find(map[string]any{}))
		require.Equal(t, []string{exchanges}, find(map[string]any{"document_ids": []string{exchanges}}))
		require.Equal(t, sorted(refunds, exchanges), find(map[string]any{"source_uri_prefix": "kb://policies/"}))
		require.Empty(t, find(map[string]any{"source_uri_prefix": "kb://policies/%"}))
		require.Empty(t, find(map[string]any{"source_uri_prefix": "KB://policies/"}))
		require.Equal(t, []string{exchanges}, find(map[string]any{"version": "v2"}))
		require.Equal(t, []string{gifts}, find(map[string]any{"title": "Gifts"}))
		require.Equal(t, []string{refunds}, find(map[string]any{"source_uri_prefix": "kb://policies/", "version": "v1"}))
		require.Empty(t, find(map[string]any{"document_ids": []string{gifts}, "version": "v2"}))

		for _, c := range []struct {
			filters map[string]any
			code    string
			member  string
		}{
			{map[string]any{"tags": []string{"x"}}, "unknown_member", "filters.tags"},
			{map[string]any{"document_ids": []string{}}, "invalid_member", "filters.document_ids"},
			{map[string]any{"source_uri_prefix": ""}, "invalid_member", "filters.source_uri_prefix"},
			{map[string]any{"version": ""}, "invalid_member", "filters.version"},
		} {
			resp := r.MustDo(http.StatusBadRequest, "POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": "gift", "kbs": []string{kb}, "filters": c.filters})
			require.Equal(t, c.code, resp.ErrorCode(t), "%v", c.filters)
			require.Equal(t, c.member, resp.JSON(t)["error"].(map[string]any)["member"], "%v", c.filters)
		}
		resp := r.MustDo(http.StatusBadRequest, "POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": "gift", "kbs": []string{kb}, "filters": []string{"x"}})
		require.Equal(t, "invalid_member", resp.ErrorCode(t))

		// Under lexical_only with the embedder down, the full-text path alone honours them too.
		lex := r.base(t, "lexical", map[string]any{"embedder_down": "lexical_only"})
		a := r.ingest(t, lex, knowledge.SubmitRequest{Text: "Boots are waterproof.", SourceURI: "kb://a/boots"}).ID
		r.ingest(t, lex, knowledge.SubmitRequest{Text: "Waterproof boots need wax.", SourceURI: "kb://b/boots"})
		r.embed.SetDown(true)
		got := r.retrieve(t, reader, map[string]any{"query": "waterproof boots", "kbs": []string{lex}, "filters": map[string]any{"source_uri_prefix": "kb://a/"}})
		require.Equal(t, knowledge.ModeLexicalOnly, got["mode"])
		require.Equal(t, []string{a}, docIDsOf(got))
	})
}
