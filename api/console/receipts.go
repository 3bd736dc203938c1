package console

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// receiptsPage is how many receipts a page of the Receipts screen shows.
const receiptsPage = 50

// actor is who a receipt names as its actor, as a person reads it.
type actor struct {
	ID     string
	Kind   string // "person", "agent" or "system"
	Name   string // the person's name or the agent's
	Vendor string
}

// Label is "agent shop-bot (acme)", "person Ada" or the system actor's id.
func (a actor) Label() string {
	switch a.Kind {
	case auth.KindAgent:
		return "agent " + a.Name + " (" + a.Vendor + ")"
	case auth.KindPerson:
		return "person " + a.Name
	}
	return a.ID
}

// receiptRow is one receipt as the screen shows it: what happened, by whom.
type receiptRow struct {
	receipts.Receipt
	What  string
	Actor actor
	For   string // the agent a person acted for (detail source_id), if any
}

type receiptsData struct {
	Receipts []receiptRow
	Kind     string
	Actor    string
	Kinds    []string
	Actors   []auth.KeyInfo
	Newer    string // link of the newer page ("" when this is the newest)
	Older    string // link of the older page ("" when this is the oldest)
	Filter   string // the filters as a query string, kept by Verify and the detail links
	Verify   *receipts.Verification
}

// whatHappened names an action as a person says it (issue 27: "note created", not only the
// spec's receipt kind); an action it does not know is shown as it is.
var whatHappened = map[string]string{
	"note.create": "note created", "note.version": "note versioned", "note.retire": "note retired",
	"notes.erase": "agent's notes erased", "notes.export": "notes exported",
	"proposal.propose": "note proposed", "proposal.draft": "proposal drafted", "proposal.approve": "proposal approved",
	"proposal.reject": "proposal rejected", "search": "notes searched", "block.read": "block read",
	"key.create": "key minted", "key.revoke": "key revoked", "space.create": "space created",
	"console.sign_in": "signed in to the Console", "profile.create": "profile created",
	"document.put": "space document saved", "document.change.propose": "document change proposed",
	"document.change.approve": "document change approved", "document.change.reject": "document change rejected",
	"erasure.request": "erasure requested", "erasure.certificate": "erasure certified", "erasure.fail": "erasure failed",
	"export.request": "export requested", "export.complete": "export built", "export.download": "export downloaded",
	"retention.sweep": "retention sweep", "base.create": "knowledge base created", "base.readers": "knowledge base readers set",
	"document.submit": "knowledge document submitted", "document.index": "knowledge document indexed",
	"document.supersede": "knowledge document superseded", "document.delete": "knowledge document deleted",
	"document.ready": "knowledge document ready", "document.refused": "knowledge document refused",
	"document.failed": "knowledge document failed", "retrieve": "knowledge retrieved",
}

func labelOf(action string) string {
	if s, ok := whatHappened[action]; ok {
		return s
	}
	return action
}

// actorsOf maps the space's key ids to actors; unknown ids ("system", "cli") are system.
func actorsOf(keys []auth.KeyInfo) map[string]actor {
	out := make(map[string]actor, len(keys))
	for _, k := range keys {
		a := actor{ID: k.ID, Kind: k.Kind, Name: k.Name, Vendor: k.Vendor}
		if k.Kind == auth.KindAgent {
			a.Name = k.Agent
		}
		out[k.ID] = a
	}
	return out
}

func rowOf(r receipts.Receipt, actors map[string]actor) receiptRow {
	a, ok := actors[r.ActorKeyID]
	if !ok {
		a = actor{ID: r.ActorKeyID, Kind: "system"}
		if a.ID == "" {
			a.ID = "the service"
		}
	}
	row := receiptRow{Receipt: r, What: labelOf(r.Action), Actor: a}
	if src, _ := r.Detail["source_id"].(string); src != "" && (a.Kind != auth.KindAgent || a.Name != src) {
		row.For = src
	}
	return row
}

// receiptsPage: the chain newest first, a page at a time, filtered by kind and actor; the
// filters are kept by the pager, by Verify and by the detail links.
func (h *Console) receiptsPage(c *gin.Context) {
	p, ok := h.allow(c, "Receipts")
	if !ok {
		return
	}
	h.showReceipts(c, p, nil)
}

func (h *Console) showReceipts(c *gin.Context, p auth.Principal, v *receipts.Verification) {
	ctx := c.Request.Context()
	d := receiptsData{Kind: c.Query("kind"), Actor: c.Query("actor"), Verify: v,
		Kinds: []string{receipts.KindAdmin, receipts.KindAgentMemory, receipts.KindCompliance, receipts.KindKnowledge, receipts.KindBoard}}
	filter := url.Values{}
	for k, val := range map[string]string{"kind": d.Kind, "actor": d.Actor} {
		if val != "" {
			filter.Set(k, val)
		}
	}
	d.Filter = filter.Encode()
	// Every committed receipt shows; nothing shown (this page, v's verification read before
	// it) can be lost.
	var list []receipts.Receipt
	var newer, older int64
	var keys []auth.KeyInfo
	err := receipts.Read(ctx, h.DB, p.SpaceID, func(ctx context.Context) error {
		var err error
		if list, newer, older, err = h.receiptPage(c, p, d); err != nil {
			return err
		}
		keys, err = auth.List(ctx, h.DB, p.SpaceID) // the keys name the receipts' actors
		return err
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	d.Actors = keys
	actors := actorsOf(keys)
	for _, r := range list {
		d.Receipts = append(d.Receipts, rowOf(r, actors))
	}
	link := func(cursor string, seq int64) string {
		q := url.Values{}
		for k, vs := range filter {
			q[k] = vs
		}
		q.Set(cursor, strconv.FormatInt(seq, 10))
		return "/console/receipts?" + q.Encode()
	}
	if newer > 0 {
		d.Newer = link("after", newer)
	}
	if older > 0 {
		d.Older = link("before", older)
	}
	h.renderView(c, http.StatusOK, "receipts", view{Title: "Receipts", Data: d})
}

// receiptPage reads one page newest first: with ?after=N the page just newer than N, with
// ?before=N the page just older than N, else the newest. newer and older are the cursors of
// the neighbouring pages (0: none that way).
func (h *Console) receiptPage(c *gin.Context, p auth.Principal, d receiptsData) (list []receipts.Receipt, newer, older int64, err error) {
	after, _ := strconv.ParseInt(c.Query("after"), 10, 64)   // not a number: the newest page
	before, _ := strconv.ParseInt(c.Query("before"), 10, 64) // idem
	f := receipts.Filter{Kind: d.Kind, ActorKey: d.Actor, Limit: receiptsPage + 1}
	forward := after > 0 && before <= 0
	if forward {
		f.After = after
	} else if before > 0 {
		f.Before = before
	} else {
		f.Before = math.MaxInt64
	}
	list, err = receipts.ListFiltered(c.Request.Context(), h.DB, p.SpaceID, f)
	if err != nil {
		return nil, 0, 0, err
	}
	more := len(list) > receiptsPage
	if more && forward {
		list = list[:receiptsPage] // the oldest of those newer than after
	} else if more {
		list = list[1:] // the newest of those older than before
	}
	slices.Reverse(list)
	if len(list) == 0 {
		return list, 0, 0, nil
	}
	if (forward && more) || (!forward && before > 0) {
		newer = list[0].Seq
	}
	if forward || more {
		older = list[len(list)-1].Seq
	}
	return list, newer, older, nil
}

// verifyReceipts: walks the whole chain (receipts.Verify) and shows the result above the
// page, with the filters kept.
func (h *Console) verifyReceipts(c *gin.Context) {
	p, ok := h.allow(c, "Receipts")
	if !ok {
		return
	}
	var v receipts.Verification
	err := receipts.Read(c.Request.Context(), h.DB, p.SpaceID, func(ctx context.Context) error {
		var err error
		v, err = receipts.Verify(ctx, h.DB, p.SpaceID)
		return err
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	h.showReceipts(c, p, &v)
}

// named is one id a receipt names, classified by what it is.
type named struct {
	What string // "note", "proposal", "knowledge chunk", "hashed id", ...
	ID   string
	Link string // the Console page of it, when there is one
}

// kindsOfID classify an id by its prefix (auth.NewID's, and knowledge's chunk ids).
var kindsOfID = []struct{ prefix, what, link string }{
	{"note_", "note", "/console/notes/"}, {"prop_", "proposal", "/console/proposals/"},
	{"er_", "erasure", "/console/compliance/erasures/"}, {"ex_", "export", ""},
	{"kc_", "knowledge chunk", ""}, {"kd_", "knowledge document", ""}, {"kb_", "knowledge base", ""},
	{"key_", "key", ""}, {"chg_", "document change", ""}, {"sp_", "space", ""}, {"prof_", "profile", ""},
	{"st_", "state", ""}, {"link_", "identity link", ""}, {"turn_", "turn", ""}, {"rcpt_", "receipt", "/console/receipts/"},
}

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

func classify(id string) named {
	for _, k := range kindsOfID {
		if strings.HasPrefix(id, k.prefix) {
			n := named{What: k.what, ID: id}
			if k.link != "" {
				n.Link = k.link + id
			}
			return n
		}
	}
	if hexHash.MatchString(id) {
		return named{What: "state or subject, by hash", ID: id}
	}
	return named{What: "name", ID: id} // a document's name, an agent's
}

// detailRow is one member of a receipt's detail, its value as text.
type detailRow struct {
	Key, Value string
}

type receiptData struct {
	Row      receiptRow
	Named    []named
	Groups   []namedGroup
	Details  []detailRow
	Proof    *receipts.Proof
	ProofOK  bool
	ProofMsg string
	Back     string // the list's link, with its filters
}

// namedGroup is the ids of one kind a receipt names, for the page's list.
type namedGroup struct {
	What string
	IDs  []named
}

func groupNamed(ns []named) []namedGroup {
	var out []namedGroup
	at := map[string]int{}
	for _, n := range ns {
		i, ok := at[n.What]
		if !ok {
			i = len(out)
			at[n.What] = i
			out = append(out, namedGroup{What: n.What})
		}
		out[i].IDs = append(out[i].IDs, n)
	}
	return out
}

func detailRows(detail map[string]any) []detailRow {
	out := make([]detailRow, 0, len(detail))
	for k, v := range detail {
		val := fmt.Sprint(v)
		switch v.(type) {
		case map[string]any, []any:
			if b, err := json.Marshal(v); err == nil { // decoded from JSON: encodes again
				val = string(b)
			}
		}
		out = append(out, detailRow{Key: k, Value: val})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// receiptDetail: one receipt (issue 27): what happened and who did it, the ids it names by
// what they are (notes and proposals linked; states and subjects by hash), its detail, and
// its inclusion proof (receipts.Prove) checked here (Proof.Verify): the receipt's content
// gives its leaf hash, the path gives its chain entry's Merkle root, and the entry's fields
// give the entry's hash. 404 for an id not in the person's space.
func (h *Console) receiptDetail(c *gin.Context) {
	p, ok := h.allow(c, "Receipts")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	// What is shown (the receipt, its entry, its manifest) must not be lost by a crash
	// after this page.
	var proof receipts.Proof
	var keys []auth.KeyInfo
	var r receipts.Receipt
	err := receipts.Read(ctx, h.DB, p.SpaceID, func(ctx context.Context) error {
		var err error
		if proof, err = receipts.Prove(ctx, h.DB, p.SpaceID, c.Param("id")); err != nil {
			return err
		}
		r = proof.Receipt
		if err := receipts.ResolveManifest(ctx, h.DB, &r); err != nil {
			return err
		}
		keys, err = auth.List(ctx, h.DB, p.SpaceID)
		return err
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	d := receiptData{Row: rowOf(r, actorsOf(keys)), Details: detailRows(r.Detail), Proof: &proof, Back: "/console/receipts"}
	if f := backFilter(c.Query("back")); f != "" {
		d.Back += "?" + f
	}
	for _, id := range r.ObjectIDs {
		d.Named = append(d.Named, classify(id))
	}
	if r.Manifest != nil { // what the read delivered (issue 32)
		for _, id := range r.Manifest.IDs() {
			d.Named = append(d.Named, classify(id))
		}
	}
	d.Groups = groupNamed(d.Named)
	if err := proof.Verify(); err != nil {
		// Verify's own words name hashes as bytes: the page says what they mean.
		d.ProofMsg = "this receipt's content no longer gives its chain entry's Merkle root and hash: it, or its entry, was changed after it was sealed"
	} else if !r.ManifestHolds() || (receipts.ManifestOf(r) != "" && r.Manifest == nil) {
		d.ProofMsg = "the notes this read delivered are no longer what its receipt names: its manifest was changed or removed after it was stored"
	} else {
		d.ProofOK = true
	}
	h.renderView(c, http.StatusOK, "receipt", view{Title: "Receipt #" + strconv.FormatInt(r.Seq, 10), Active: "Receipts", Data: d})
}

// backFilter keeps of a detail page's ?back= (the list's filters) only kind and actor, encoded
// again, so the link back to the list carries nothing else.
func backFilter(back string) string {
	q, err := url.ParseQuery(back)
	if err != nil {
		return "" // a broken value: back to the unfiltered list
	}
	out := url.Values{}
	for _, k := range []string{"kind", "actor"} {
		if v := q.Get(k); v != "" {
			out.Set(k, v)
		}
	}
	return out.Encode()
}
