package api_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
)

// AM-6: the gate on every write path, by kind: accepted inputs are stored, refused ones are
// 422 personal_data_in_agent_memory with the kinds (never the values), nothing stored.
func TestNoteGate(t *testing.T) {
	accepted := []struct{ name, in string }{
		{"ids, versions, builds and forms", "Roll build eu-20260812-09 after v1.2.3.4; form 1545-0008; order 4412-9981-0033"},
		{"organisations and places", "The ERP at Acme Ltda in São Paulo posts credits at night"},
		{"11 digits failing CPF check digits", "pedido 12345678901"},
		{"one repeated digit is no CPF", "use 111.111.111-11 as the test document"},
		{"hosts and URLs", "The API at api.acme.com.br:8443 times out after 30 s; see https://status.acme.com"},
		{"ticket numbers", "ticket #55512345678 was closed; chamado 2026-000123"},
		{"short local extensions", "call extension 555-0100 for the service desk"},
		{"words around at and dot", "look at the dot com era of tools"},
		{"amounts and dates", "credits of R$ 1.234,56 post on 2026-08-12 at 03:00"},
	}
	refused := []struct {
		name, in string
		kinds    []string
	}{
		{"phone glued to a word", "ligar para suporte(11)91234-5678", []string{"phone"}},
		{"French mobile", "+33 6 12 34 56 78", []string{"phone"}},
		{"UK landline", "+44 20 7123 4567", []string{"phone"}},
		{"Brazilian mobile, national", "o cliente atende no 11 98765-4321", []string{"phone"}},
		{"US number, formatted", "call (977) 625-2661 back", []string{"phone"}},
		{"formatted CPF", "CPF 529.982.247-25", []string{"cpf"}},
		{"bare CPF", "52998224725", []string{"cpf"}},
		{"formatted CNPJ", "CNPJ 11.222.333/0001-81", []string{"cnpj"}},
		{"bare CNPJ", "fornecedor 11222333000181", []string{"cnpj"}},
		{"internationalised e-mail", "escreva para joão@empresa.com.br", []string{"email"}},
		{"plain e-mail", "cminh730@email.com", []string{"email"}},
		{"spelled-out e-mail", "write to ana at example dot com", []string{"email"}},
		{"full-width e-mail", "ａｎａ＠ｅｘａｍｐｌｅ．ｃｏｍ", []string{"email"}},
		{"zero-width inside e-mail", "ana\u200b@exa\u200bmple.com", []string{"email"}},
		{"e-mail and phone", "ana@example.com or +44 20 7123 4567", []string{"email", "phone"}},
	}
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		integ := e.PersonKey("loader", "integration")
		writer(e, "shop-bot", "acme")
		for _, tc := range accepted {
			r := e.Do("POST", notesPath, integ, note("Accepted", tc.in, "source_id", "shop-bot"))
			require.Equal(t, 201, r.Status, "%s: %q: got %d, want 201: %s", tc.name, tc.in, r.Status, r.Body)
		}
		for _, tc := range refused {
			r := e.Do("POST", notesPath, integ, note("Refused", tc.in, "source_id", "shop-bot"))
			m := requireError(t, r, 422, "personal_data_in_agent_memory")
			require.Equal(t, tc.kinds, strs(m["kinds"]), "%s: %q", tc.name, tc.in)
			require.NotContains(t, string(r.Body), tc.in, "the answer never carries the value")
			// The title is gated too.
			r = e.Do("POST", notesPath, integ, note(tc.in, "Body.", "source_id", "shop-bot"))
			require.Equal(t, 422, r.Status, "%s in the title: got %d", tc.name, r.Status)
		}
		require.Len(t, listIDs(e, integ, ""), len(accepted))
	})
}

// AM-6: a known subject of the space (a profile's name or handle) is refused, on new notes,
// edits and approval edits alike.
func TestNoteGateKnownSubjects(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		integ := e.PersonKey("loader", "integration")
		bot := writer(e, "shop-bot", "acme")
		e.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{
			"name": "Crystal Minh", "handles": []string{"username:cminh730", "email:cminh730@email.com"},
		})
		m := requireError(t, e.Do("POST", notesPath, bot, note("Escalation", "Crystal Minh asked for a manager.")), 422, "personal_data_in_agent_memory")
		require.Equal(t, []string{"subject"}, strs(m["kinds"]))
		requireError(t, e.Do("POST", notesPath, bot, note("Escalation", "user cminh730 again")), 422, "personal_data_in_agent_memory")
		id := create(e, bot, note("Escalation", "Offer a manager call-back when a return is refused."))
		requireError(t, e.Do("POST", notesPath+"/"+id+"/versions", bot, map[string]any{"body": "Crystal Minh wanted a call-back."}), 422, "personal_data_in_agent_memory")
		require.Equal(t, []string{id}, listIDs(e, bot, ""))
	})
}

// AM-6: a value split across fields is refused: the gate also reads title, body and tags
// concatenated without separator (redact.JoinForCheck), on new notes and on edits. Format
// characters and other scripts' digits do not hide a value either.
func TestNoteGateSplitAcrossFields(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		m := requireError(t, e.Do("POST", notesPath, bot, note("Customer ana@", "example.com is the right mailbox")), 422, "personal_data_in_agent_memory")
		require.Equal(t, []string{"email"}, strs(m["kinds"]))
		m = requireError(t, e.Do("POST", notesPath, bot, note("Call (11) 91234-", "5678 after the refund")), 422, "personal_data_in_agent_memory")
		require.Equal(t, []string{"phone"}, strs(m["kinds"]))
		m = requireError(t, e.Do("POST", notesPath, bot, note("Escalation", "Write to ana\u202e@example.com or call (\u0661\u0661) \u0669\u0661\u0662\u0663\u0664-\u0665\u0666\u0667\u0668")), 422, "personal_data_in_agent_memory")
		require.Equal(t, []string{"email", "phone"}, strs(m["kinds"]))
		id := create(e, bot, note("Customer mailbox", "Ask which mailbox the customer prefers."))
		requireError(t, e.Do("POST", notesPath+"/"+id+"/versions", bot, map[string]any{"title": "Customer ana@", "body": "example.com is the right mailbox"}), 422, "personal_data_in_agent_memory")
		// An address split across adjacent tags (joined by "@" for the check).
		m = requireError(t, e.Do("POST", notesPath, bot, note("Contact", "Ask the customer.", "tags", []string{"ana", "example.com"})), 422, "personal_data_in_agent_memory")
		require.Equal(t, []string{"email"}, strs(m["kinds"]))
		create(e, bot, note("Refund routing", "Route by country.", "tags", []string{"refund", "orders", "br"}))
		// Fields that are clean on their own and together are stored.
		create(e, bot, note("Support line", "Call the support line 0800 123 4567; NodePort uses the port range 30000-32767."))
		require.Len(t, listIDs(e, bot, ""), 3)
	})
}

// detector is the model layer as seen by the gate: it answers kinds, fails, or never
// answers (until the gate's deadline). Its fields are guarded: a hanging call outlives the
// request that made it.
type detector struct {
	mu    sync.Mutex
	kinds []string
	err   error
	hang  bool
	calls int
}

func (d *detector) set(kinds []string, err error, hang bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.kinds, d.err, d.hang = kinds, err, hang
}

func (d *detector) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

func (d *detector) DetectKinds(ctx context.Context, text string) ([]string, error) {
	d.mu.Lock()
	d.calls++
	kinds, err, hang := d.kinds, d.err, d.hang
	d.mu.Unlock()
	if hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return kinds, err
}

// AM-6: the model layer: its kinds refuse the note (sanitised: no value comes back through
// a kind); when it fails or does not answer in time the write is 503 detector_unavailable
// with Retry-After and nothing is stored.
func TestNoteGateModelLayer(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			det := &detector{}
			e := apptest.New(t, engine, func(d *api.Deps) {
				d.Notes.Detector = det
				d.Notes.DetectorTimeout = 50 * time.Millisecond
			})
			enableNotes(e, nil)
			bot := writer(e, "shop-bot", "acme")
			create(e, bot, note("Clean", "Validate the purchase first."))
			require.Equal(t, 1, det.count())

			det.set([]string{"name", "ana@example.com"}, nil, false)
			m := requireError(t, e.Do("POST", notesPath, bot, note("t", "Talk to the night shift.")), 422, "personal_data_in_agent_memory")
			require.Equal(t, []string{"name", "personal_data"}, strs(m["kinds"]))

			det.set(nil, errors.New("model not loaded"), false)
			r := e.Do("POST", notesPath, bot, note("t", "b"))
			requireError(t, r, 503, "detector_unavailable")
			require.NotEmpty(t, r.Header.Get("Retry-After"))

			det.set(nil, nil, true)
			r = e.Do("POST", notesPath, bot, note("t", "b"))
			requireError(t, r, 503, "detector_unavailable")
			require.Equal(t, "1", r.Header.Get("Retry-After"))

			// The local layer refuses before the model is asked.
			det.set(nil, nil, false)
			calls := det.count()
			requireError(t, e.Do("POST", notesPath, bot, note("t", "+44 20 7123 4567")), 422, "personal_data_in_agent_memory")
			require.Equal(t, calls, det.count())
			require.Len(t, listIDs(e, bot, ""), 1, "nothing unchecked was stored")
		})
	}
}
