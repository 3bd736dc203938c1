package compliance

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
)

// ErasureRequest is the body of POST /v1/erasures: exactly one of Subject (a customer handle
// such as "email:ana@example.com") or ConversationID.
type ErasureRequest struct {
	Subject        string `json:"subject"`
	ConversationID string `json:"conversation_id"`
}

// Item is what an erasure removed of one kind: how many, and the SHA-256 of each id.
type Item struct {
	Kind      string   `json:"kind"`
	Store     string   `json:"store,omitempty"`
	Count     int      `json:"count"`
	HashedIDs []string `json:"hashed_ids"`
}

// ChainPosition places a receipt in its space's chain: its seq, and the chain entry holding
// it (PrevHash and Hash; the certificate's receipt is an entry of its own, so the entry's seq
// is Seq and its Merkle root is LeafHash, the receipt's leaf hash).
type ChainPosition struct {
	ReceiptID string `json:"receipt_id"`
	Seq       int64  `json:"seq"`
	PrevHash  string `json:"prev_hash"`
	Hash      string `json:"hash"`
	LeafHash  string `json:"leaf_hash,omitempty"`
}

// Certificate is the proof of an erasure (GOV-2): what kinds of data, how many items, their
// hashed ids, who asked, when it started and ended, and where its receipt sits in the chain.
// It never holds a value, a handle or a conversation id. NothingFound is true when nothing
// was left to erase (a repeated erasure). NotCovered names kinds this build could not reach.
type Certificate struct {
	// Type is CertificateType, inside what is signed, so that no other signed document (a
	// receipt head) can pass for a certificate.
	Type         string    `json:"type"`
	ErasureID    string    `json:"erasure_id"`
	SpaceID      string    `json:"space_id"`
	TargetKind   string    `json:"target_kind"`
	RequestedBy  string    `json:"requested_by"`
	StartedAt    time.Time `json:"started_at"`
	EndedAt      time.Time `json:"ended_at"`
	Items        []Item    `json:"items"`
	Total        int       `json:"total"`
	NothingFound bool      `json:"nothing_found"`
	NotCovered   []string  `json:"not_covered"`
	// Stores lists every registered store (and the key store for a subject): what the
	// erasure removed there (summed over every round) and what the probe found after the
	// steps (always 0 here: residue runs the steps again, and residue after the last round
	// fails the erasure with "residue:<stores>").
	Stores []StoreReport `json:"stores"`
	// Rounds is how many rounds of steps the erasure ran (1 normally; up to MaxErasureRounds
	// when something was written for the subject during the erasure and the probe found it).
	// Items and Stores' Removed sum what every round removed.
	Rounds int `json:"rounds"`
	// Status is how the erasure ended: StatusCompleted, or StatusCompletedWithResidue when the
	// content probe found items that only the subject's name ties to her (issue 29 §1b);
	// Residue is how many (listed for a person to decide, GET /v1/erasures/{id}).
	Status  string `json:"status"`
	Residue int    `json:"residue"`
	// Sinks lists each export sink configured when the erasure completed, with the cursor it
	// had acknowledged then (issue 33), at or past FeedCursor, the feed's cursor once the
	// erasure's steps had committed: every tombstone of the erasure was delivered to each.
	// Absent without sinks (and in certificates from before).
	Sinks      []SinkDelivery `json:"sinks,omitempty"`
	FeedCursor *int64         `json:"feed_cursor,omitempty"`
	// WorkflowHistory says what Temporal holds of the subject (WorkflowHistoryNote).
	WorkflowHistory string         `json:"workflow_history"`
	Receipt         *ChainPosition `json:"receipt,omitempty"`
}

// CertificateType is the "type" member of every certificate.
const CertificateType = "erasure_certificate"

// CertificateSigner signs a certificate's canonical bytes when an erasure completes (PR-3):
// *signing.Signer. Without one, certificates are stored unsigned.
type CertificateSigner interface {
	Sign(doc []byte) (signing.Signature, error)
}

// ErasureView is GET /v1/erasures/{id}; Certificate is null until the erasure completes.
// Reason is set only when the erasure failed: a short code naming why (a step's name, e.g.
// "residue:<stores>", "start_failed", or "workflow_terminated" when the reconciler
// found its workflow ended; never personal data).
type ErasureView struct {
	ErasureID   string       `json:"erasure_id"`
	Status      string       `json:"status"`
	Reason      string       `json:"reason,omitempty"`
	TargetKind  string       `json:"target_kind"`
	CreatedAt   time.Time    `json:"created_at"`
	EndedAt     *time.Time   `json:"ended_at"`
	Certificate *Certificate `json:"certificate"`
	// Residue lists what the content probe found by the subject's name only (issue 29 §1b),
	// for a person to decide: ids, kinds and decisions, never a value. Empty otherwise.
	Residue []ResidueItem `json:"residue"`
}

type itemSet map[string]*Item

// MayRequest reports whether p may request an erasure or an export (role compliance, GOV-2,
// GOV-3): nil, or fault.Forbidden. The API asks before it reads the request body (issue 11 §1).
func MayRequest(p auth.Principal) error { return p.RequireRole(auth.RoleCompliance) }

// RequestErasure validates req for p (role compliance), records a pending erasure with an
// "erasure.request" compliance receipt, and returns its id; the caller then starts the
// workflow, whose first step (ResolveErasure) moves it to running. The handle is kept only as
// its keyed hash. Errors: fault.Forbidden (role), fault.Invalid (both or neither target,
// malformed handle).
func (s *Service) RequestErasure(ctx context.Context, p auth.Principal, req ErasureRequest) (string, error) {
	if err := MayRequest(p); err != nil {
		return "", err
	}
	row := &models.Erasure{
		ID: auth.NewID("er"), SpaceID: p.SpaceID, ScopeHashes: "[]", ProfileIDs: "[]", Items: "{}",
		Status: StatusPending, RequestedBy: p.KeyID, CreatedAt: s.now(),
	}
	var err error
	if row.TargetKind, row.TargetHash, row.TargetRef, err = s.requestTarget(ctx, p.SpaceID, req); err != nil {
		return "", err
	}
	if row.TargetKind == TargetSubject {
		// The content probe's first needle (issue 29 §1b), sealed under the erasure's own key.
		c, err := s.Subjects.Canonical(ctx, p.SpaceID, req.Subject)
		if err != nil {
			return "", err
		}
		if row.SealedNeedles, err = s.requestNeedles(ctx, p.SpaceID, row.ID, c); err != nil {
			return "", err
		}
	}
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return fmt.Errorf("compliance: insert erasure: %w", err)
		}
		_, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindCompliance, Action: "erasure.request", ActorKey: p.KeyID,
			ObjectIDs: []string{row.ID}, Detail: map[string]any{"target_kind": row.TargetKind},
		}, row.CreatedAt)
		return err
	})
	if err != nil {
		return "", err
	}
	return row.ID, nil
}

// requestTarget validates req's target: exactly one of a customer handle (kept as its keyed
// hash) or a conversation id (its keyed scope hash, and the id as ref). Errors are
// fault.Invalid naming the member.
func (s *Service) requestTarget(ctx context.Context, spaceID string, req ErasureRequest) (kind, hash, ref string, err error) {
	subject, conv := strings.TrimSpace(req.Subject), strings.TrimSpace(req.ConversationID)
	switch {
	case (subject == "") == (conv == ""):
		return "", "", "", fault.New(fault.Invalid, "invalid_member", `give exactly one of "subject" or "conversation_id"`).With("member", "subject")
	case subject != "":
		c, err := s.Subjects.Canonical(ctx, spaceID, subject)
		if err != nil {
			return "", "", "", fault.New(fault.Invalid, "invalid_handle", "subject is a customer handle such as email:... or phone:...").With("member", "subject")
		}
		return TargetSubject, s.Subjects.HandleHash(spaceID, c), "", nil
	default:
		if len(conv) > 512 {
			return "", "", "", fault.New(fault.Invalid, "invalid_member", "conversation_id is 1-512 characters").With("member", "conversation_id")
		}
		return TargetConversation, s.Hasher.Hash(spaceID, "scope:conversation", conv), conv, nil
	}
}

// GetErasure returns an erasure of p's space (role compliance or admin). Unknown is
// fault.NotFound "erasure_not_found".
func (s *Service) GetErasure(ctx context.Context, p auth.Principal, id string) (ErasureView, error) {
	if err := p.RequireRole(auth.RoleCompliance, auth.RoleAdmin); err != nil {
		return ErasureView{}, err
	}
	row, err := s.loadErasure(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return ErasureView{}, err
	}
	v := ErasureView{ErasureID: row.ID, Status: row.Status, TargetKind: row.TargetKind, CreatedAt: row.CreatedAt.UTC()}
	if row.Status == StatusFailed {
		v.Reason = row.Failure
	}
	if row.EndedAt != nil {
		t := row.EndedAt.UTC()
		v.EndedAt = &t
	}
	if row.Certificate != "" {
		var c Certificate
		if err := json.Unmarshal([]byte(row.Certificate), &c); err != nil {
			return ErasureView{}, fmt.Errorf("compliance: decode certificate: %w", err)
		}
		v.Certificate = &c
	}
	if v.Residue, err = residueOf(ctx, s.DB, row.ID); err != nil {
		return ErasureView{}, err
	}
	return v, nil
}

func (s *Service) loadErasure(ctx context.Context, idb bun.IDB, spaceID, id string) (*models.Erasure, error) {
	var row models.Erasure
	err := idb.NewSelect().Model(&row).Where("id = ? AND space_id = ?", id, spaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "erasure_not_found", "no erasure with that id in this space")
	}
	if err != nil {
		return nil, fmt.Errorf("compliance: load erasure: %w", err)
	}
	return &row, nil
}

// Resolution is what ResolveErasure fixed: how many profiles the subject resolves to, and
// the stores the erasure erases, in order (the registry's names).
type Resolution struct {
	Profiles int
	Stores   []string
}

// ResolveErasure is the workflow's first step: it moves a pending erasure to running
// (Transition) and fixes what a subject erasure covers (subjectScope: the profiles holding
// the handle and the keyed hashes of every handle of theirs, plus the requested one) and the
// stores it erases, in order (the erasure registry's names, issue 29 §4). Both are stored on
// the erasure, so later steps (and retries) work from them after the handles are deleted.
// Calling it again on a running erasure changes nothing (an erasure resolved before stores
// were recorded gets them now). Errors: fault.Conflict "erasure_not_running" for a failed or
// completed erasure, "corrupt_record" when the stored profile ids or stores do not decode.
func (s *Service) ResolveErasure(ctx context.Context, spaceID, id string) (Resolution, error) {
	var out Resolution
	needles, err := s.resolveNeedles(ctx, spaceID, id)
	if err != nil {
		return out, err
	}
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		row, err := s.loadErasure(ctx, tx, spaceID, id)
		if err != nil {
			return err
		}
		switch row.Status {
		case StatusRunning:
		case StatusPending:
			if err := s.setStatus(ctx, tx, row, StatusRunning); err != nil {
				return err
			}
		default:
			return errNotRunning(row.Status)
		}
		if out.Stores, err = s.recordStores(ctx, tx, row); err != nil {
			return err
		}
		if row.Resolved {
			var ids []string
			if err := decodeRecord(row.ID, "profile_ids", row.ProfileIDs, &ids); err != nil {
				return err
			}
			out.Profiles = len(ids)
			return nil
		}
		hashes, ids := []string{}, []string{}
		if row.TargetKind == TargetSubject {
			if ids, hashes, err = subjectScope(ctx, tx, spaceID, row.TargetHash); err != nil {
				return err
			}
		}
		out.Profiles = len(ids)
		q := tx.NewUpdate().Model((*models.Erasure)(nil)).
			Set("resolved = ?", true).Set("scope_hashes = ?", mustJSON(hashes)).Set("profile_ids = ?", mustJSON(ids))
		if needles != nil {
			q = q.Set("sealed_needles = ?", needles)
		}
		_, err = q.Where("id = ?", id).Exec(ctx)
		return err
	})
	return out, err
}

// resolveNeedles returns, for a subject erasure not resolved yet, its content-probe needles
// with its profiles' names and handles added (profileNeedles), read before ResolveErasure's
// transaction; nil otherwise.
func (s *Service) resolveNeedles(ctx context.Context, spaceID, id string) ([]byte, error) {
	row, err := s.loadErasure(ctx, s.DB, spaceID, id)
	if err != nil {
		return nil, err
	}
	if row.Resolved || row.TargetKind != TargetSubject || (row.Status != StatusPending && row.Status != StatusRunning) {
		return nil, nil
	}
	sealed, err := s.profileNeedles(ctx, row)
	if errors.Is(err, errNeedlesUnreadable) {
		return nil, nil // linkage only; the certificate says the content probe did not run
	}
	return sealed, err
}

// recordStores returns the stores row erases, in order: those it recorded, or else the
// registry's names now, recorded on row inside tx.
func (s *Service) recordStores(ctx context.Context, tx bun.Tx, row *models.Erasure) ([]string, error) {
	if row.Stores != "" {
		var stores []string
		if err := decodeRecord(row.ID, "stores", row.Stores, &stores); err != nil {
			return nil, err
		}
		return stores, nil
	}
	stores := s.Registry().Names()
	row.Stores = mustJSON(stores)
	if _, err := tx.NewUpdate().Model((*models.Erasure)(nil)).Set("stores = ?", row.Stores).Where("id = ?", row.ID).Exec(ctx); err != nil {
		return nil, fmt.Errorf("compliance: record stores: %w", err)
	}
	return stores, nil
}

// step runs fn inside one transaction with the resolved, running erasure, then adds what fn
// erased to the erasure's items in the same transaction, so a retried step counts nothing
// twice. An erasure that is not running is fault.Conflict "erasure_not_running" (never a
// silent skip); stored scope or items that do not decode are "corrupt_record".
func (s *Service) step(ctx context.Context, spaceID, id string, fn func(ctx context.Context, tx bun.Tx, row *models.Erasure, hashes, profileIDs []string) ([]erased, error)) (int, error) {
	n := 0
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		row, err := s.loadErasure(ctx, tx, spaceID, id)
		if err != nil {
			return err
		}
		if !row.Resolved {
			return fmt.Errorf("compliance: erasure %s is not resolved", id)
		}
		if row.Status != StatusRunning {
			return errNotRunning(row.Status)
		}
		hashes, profileIDs, err := scopeOf(row)
		if err != nil {
			return err
		}
		erased, err := fn(ctx, tx, row, hashes, profileIDs)
		if err != nil {
			return err
		}
		items := itemSet{}
		if err := decodeRecord(row.ID, "items", row.Items, &items); err != nil {
			return err
		}
		for _, e := range erased {
			it := items[e.Kind]
			if it == nil {
				it = &Item{Kind: e.Kind, Store: e.Store, HashedIDs: []string{}}
				items[e.Kind] = it
			}
			for _, x := range e.IDs {
				it.HashedIDs = append(it.HashedIDs, HashID(x))
			}
			it.Count += len(e.IDs)
			n += len(e.IDs)
		}
		_, err = tx.NewUpdate().Model((*models.Erasure)(nil)).Set("items = ?", mustJSON(items)).Where("id = ?", id).Exec(ctx)
		return err
	})
	return n, err
}

// EraseStates deletes the working states in scope (WM-13): for a subject, every state whose
// scope is one of their handles or whose `subject` names them; for a conversation, the states
// of that conversation's scope. It returns how many it deleted.
func (s *Service) EraseStates(ctx context.Context, spaceID, id string) (int, error) {
	return s.eraseStore(ctx, spaceID, id, StoreState)
}

// EraseTurns deletes, through the registered turns eraser, a subject's identity links and the turns of
// their linked conversations, or a conversation's turns (fixed-step workflows). Without one it erases
// nothing and the certificate lists turns and identity links as not covered.
func (s *Service) EraseTurns(ctx context.Context, spaceID, id string) (int, error) {
	return s.eraseStore(ctx, spaceID, id, StoreTurns)
}

// EraseExports deletes the subject's data packages (GOV-3: packages are erased too).
func (s *Service) EraseExports(ctx context.Context, spaceID, id string) (int, error) {
	return s.eraseStore(ctx, spaceID, id, StoreExports)
}

// EraseKnowledge deletes the knowledge documents that name the subject (allow_with_subject)
// with their chunks, vectors and full-text entries (KN-3), through the registered
// StoreKnowledge eraser; without one it erases nothing.
func (s *Service) EraseKnowledge(ctx context.Context, spaceID, id string) (int, error) {
	return s.eraseStore(ctx, spaceID, id, StoreKnowledge)
}

// EraseProfiles deletes the subject's profiles and their handles.
func (s *Service) EraseProfiles(ctx context.Context, spaceID, id string) (int, error) {
	return s.eraseStore(ctx, spaceID, id, StoreSubjects)
}

// DestroyKeys destroys the subject's data keys (GOV-2, MS-4): each profile's key and the key
// of every handle hash (state.SubjectKeyID). Data sealed under them, in the database or any
// backup of it, can no longer be opened. A conversation erasure destroys no key. It returns
// how many keys existed and were destroyed.
//
// Destruction and its record are one unit (issue 12 §1): the ids of the keys that exist are
// recorded on the erasure (key_ids) before any is destroyed; a retried step works from that
// record, so keys destroyed by an earlier attempt are still counted, and the count is added
// to the certificate's items once. Errors: "erasure_not_running", "corrupt_record", and the
// key store's errors (retried).
func (s *Service) DestroyKeys(ctx context.Context, spaceID, id string) (int, error) {
	intended, subject, err := s.intendedKeys(ctx, spaceID, id)
	if err != nil || !subject {
		return 0, err
	}
	for _, k := range intended {
		if err := s.Keys.Destroy(ctx, k); err != nil {
			return 0, fmt.Errorf("compliance: destroy key: %w", err)
		}
	}
	if err := s.recordKeysDestroyed(ctx, spaceID, id, intended); err != nil {
		return 0, err
	}
	return len(intended), nil
}

// intendedKeys returns the ids of the keys DestroyKeys destroys for the running erasure id,
// and whether it targets a subject (false: no key to destroy): those already recorded on the
// erasure (key_ids), or, at the first attempt, those of the subject's profiles and handle
// hashes that exist, recorded in the same transaction.
func (s *Service) intendedKeys(ctx context.Context, spaceID, id string) ([]string, bool, error) {
	var intended []string
	subject := false
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		row, err := s.loadErasure(ctx, tx, spaceID, id)
		if err != nil {
			return err
		}
		if row.Status != StatusRunning {
			return errNotRunning(row.Status)
		}
		if row.TargetKind != TargetSubject {
			return nil
		}
		subject = true
		if row.KeyIDs != "" {
			return decodeRecord(row.ID, "key_ids", row.KeyIDs, &intended)
		}
		if intended, err = s.existingKeys(ctx, row); err != nil {
			return err
		}
		_, err = tx.NewUpdate().Model((*models.Erasure)(nil)).Set("key_ids = ?", mustJSON(intended)).Where("id = ?", id).Exec(ctx)
		return err
	})
	return intended, subject, err
}

// existingKeys returns, of the keys of the erasure's subject (each profile's, and
// state.SubjectKeyID of each handle hash), those the key store holds, never nil.
// Existence only: a key is never opened to be destroyed, so a key wrapped by a KEK this
// process does not hold is still found, destroyed and counted.
func (s *Service) existingKeys(ctx context.Context, row *models.Erasure) ([]string, error) {
	hashes, profileIDs, err := scopeOf(row)
	if err != nil {
		return nil, err
	}
	candidates := append([]string{}, profileIDs...)
	for _, h := range hashes {
		candidates = append(candidates, state.SubjectKeyID(h))
	}
	intended := []string{}
	for _, k := range candidates {
		ok, err := s.Keys.Exists(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("compliance: data key: %w", err)
		}
		if ok {
			intended = append(intended, k)
		}
	}
	return intended, nil
}

// recordKeysDestroyed adds the destroyed keys to the erasure's items once per round
// (keys_round records it; a row from before rounds existed has keys_round 0 and its count in
// items), as a step of the erasure.
func (s *Service) recordKeysDestroyed(ctx context.Context, spaceID, id string, intended []string) error {
	_, err := s.step(ctx, spaceID, id, func(ctx context.Context, tx bun.Tx, row *models.Erasure, _, _ []string) ([]erased, error) {
		items := itemSet{}
		if err := decodeRecord(row.ID, "items", row.Items, &items); err != nil {
			return nil, err
		}
		round := roundOf(row)
		if row.KeysRound >= round || (round == 1 && items[KindSubjectKey] != nil) {
			return nil, nil // recorded by an earlier attempt
		}
		if _, err := tx.NewUpdate().Model((*models.Erasure)(nil)).Set("keys_round = ?", round).Where("id = ?", row.ID).Exec(ctx); err != nil {
			return nil, fmt.Errorf("compliance: record key round: %w", err)
		}
		if len(intended) == 0 {
			return nil, nil
		}
		return []erased{{Kind: KindSubjectKey, IDs: intended, Store: StoreKeys}}, nil
	})
	return err
}

// PurgeCaches drops this process's cached view of the space's subjects (MS-4). Other
// processes reload theirs at their next use: the erasure bumped the space's profile revision
// in the transaction that deleted the profiles (subjects.Service.Known).
func (s *Service) PurgeCaches(_ context.Context, spaceID string) {
	if s.Subjects != nil {
		s.Subjects.Forget(spaceID)
	}
}

// Checkpoint makes deleted data leave the database files where the request can afford it:
// on SQLite (secure_delete is on) it checkpoints the WAL into the main file and truncates it,
// failing (to be retried) while readers or another process's checkpoint hold it back (this
// process's own checkpoints take turns with it: see internal/db's writeGate). On PostgreSQL it does nothing: an
// erasure no longer vacuums whole tables per request (a cost growing with all data, not with
// the subject); sealed bytes are unreadable once the key is destroyed, and unsealed derived
// entries (keyed hashes, full-text) leave the disk at the next vacuum (issue 12 §3).
func (s *Service) Checkpoint(ctx context.Context) error {
	if !db.IsSQLite(s.DB) {
		return nil
	}
	var busy, logFrames, done int
	if err := s.DB.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil {
		return fmt.Errorf("compliance: checkpoint: %w", err)
	}
	if busy != 0 {
		return fmt.Errorf("compliance: checkpoint blocked by readers or another process's checkpoint")
	}
	return nil
}

// MaxErasureRounds is how many rounds of steps an erasure runs at most: when the probe finds
// residue (something written for the subject during the erasure, e.g. an agent still in
// conversation saving its working state), the steps run again and the probe again; residue
// after the last round fails the erasure with "residue:<stores>".
const MaxErasureRounds = 3

// roundOf is row's current round (1 for a row from before rounds existed).
func roundOf(row *models.Erasure) int {
	if row.Round < 1 {
		return 1
	}
	return row.Round
}

// Probe asks every registered store and the key store for residue of a running erasure's
// target (issue 12 §3) and returns the names of the stores where it found some (empty: none),
// sorted in registry order. It changes nothing: the workflow decides to re-run the steps
// (RerunErasure), to certify, or to fail the erasure with "residue:<stores>". Errors:
// fault.Conflict "erasure_not_running" for an erasure that is not running, "corrupt_record".
func (s *Service) Probe(ctx context.Context, spaceID, id string) ([]string, error) {
	row, err := s.loadErasure(ctx, s.DB, spaceID, id)
	if err != nil {
		return nil, err
	}
	if row.Status != StatusRunning {
		return nil, errNotRunning(row.Status)
	}
	if !row.Resolved {
		return nil, fmt.Errorf("compliance: erasure %s is not resolved", id)
	}
	items := itemSet{}
	if err := decodeRecord(row.ID, "items", row.Items, &items); err != nil {
		return nil, err
	}
	stores, _, err := s.probe(ctx, s.DB, row, items)
	if err != nil {
		return nil, err
	}
	residue := []string{}
	for _, st := range stores {
		if st.Probe != 0 {
			residue = append(residue, st.Store)
		}
	}
	return residue, nil
}

// RerunErasure starts round (2..MaxErasureRounds) of a running erasure after the probe found
// residue: the erasure stays running (the state machine allows no other move), its round is
// recorded and its key intent cleared, so the key step looks again for keys created since
// (a write for the subject recreates its key). What earlier rounds removed stays in the
// items; the steps add what this round removes. Calling it again for the same round (a
// retried activity) changes nothing. Errors: fault.Invalid "invalid_round" for a round
// out of range or not the next one, "erasure_not_running".
func (s *Service) RerunErasure(ctx context.Context, spaceID, id string, round int) error {
	if round < 2 || round > MaxErasureRounds {
		return fault.New(fault.Invalid, "invalid_round", "round %d is out of 2..%d", round, MaxErasureRounds)
	}
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		row, err := s.loadErasure(ctx, tx, spaceID, id)
		if err != nil {
			return err
		}
		if row.Status != StatusRunning {
			return errNotRunning(row.Status)
		}
		cur := roundOf(row)
		if cur >= round {
			return nil // a retried activity
		}
		if cur != round-1 {
			return fault.New(fault.Invalid, "invalid_round", "round %d does not follow round %d", round, cur)
		}
		_, err = tx.NewUpdate().Model((*models.Erasure)(nil)).Set("round = ?", round).Set("key_ids = ''").
			Where("id = ? AND status = ?", id, StatusRunning).Exec(ctx)
		if err != nil {
			return fmt.Errorf("compliance: erasure round: %w", err)
		}
		return nil
	})
}

// Certify completes a running erasure (running → completed): it writes the certificate as a
// "erasure.certificate" compliance receipt (in the same transaction as the status change),
// clears the conversation id it held, and returns the certificate with its chain position.
// Before it, the probe asks every registered store and the key store for residue of the
// target (issue 12 §3); residue anywhere fails the erasure instead, with reason
// "residue:<stores>", and is fault.Conflict "residue". The certificate lists per store what
// was removed and what the probe found (0), and the number of rounds the erasure ran.
// Certifying a completed erasure returns its certificate unchanged (a retried activity);
// a pending or failed erasure is fault.Conflict "erasure_not_running", never certified.
func (s *Service) Certify(ctx context.Context, spaceID, id string) (Certificate, error) {
	var cert Certificate
	var residue []string
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		cert, residue, err = s.certifyIn(ctx, tx, spaceID, id)
		return err
	})
	if err == nil {
		// Ended (completed or failed): the needles' key goes, so no copy of the row opens them.
		err = s.destroyNeedles(ctx, id)
	}
	if err == nil && len(residue) > 0 {
		return Certificate{}, fault.New(fault.Conflict, "residue", "the probe found data left in: %s", strings.Join(residue, ", "))
	}
	return cert, err
}

// certifyIn is Certify's transaction tx: the erasure's state (a completed one answers its
// stored certificate), the probe, then either the failure naming the stores with residue
// (returned, committed) or the certificate, built and issued.
func (s *Service) certifyIn(ctx context.Context, tx bun.Tx, spaceID, id string) (Certificate, []string, error) {
	var cert Certificate
	row, err := s.loadErasure(ctx, tx, spaceID, id)
	if err != nil {
		return cert, nil, err
	}
	if Completed(row.Status) {
		return cert, nil, decodeRecord(row.ID, "certificate", row.Certificate, &cert)
	}
	if row.Status != StatusRunning && row.Status != StatusPendingSinks {
		return cert, nil, errNotRunning(row.Status)
	}
	items := itemSet{}
	if err := decodeRecord(row.ID, "items", row.Items, &items); err != nil {
		return cert, nil, err
	}
	stores, names, err := s.probe(ctx, tx, row, items)
	if err != nil {
		return cert, nil, err
	}
	if residue := residueStores(stores); len(residue) > 0 {
		return cert, residue, s.failResidue(ctx, tx, row, residue)
	}
	if cert, err = s.buildCertificate(ctx, tx, row, items, stores, names); err != nil {
		return cert, nil, err
	}
	return cert, nil, s.issueCertificate(ctx, tx, row, &cert)
}

// residueStores names the stores whose probe found something, in stores' order.
func residueStores(stores []StoreReport) []string {
	var out []string
	for _, st := range stores {
		if st.Probe != 0 {
			out = append(out, st.Store)
		}
	}
	return out
}

// failResidue fails erasure row because the steps left something in the stores residue
// (reason "residue:<stores>"), with its erasure.fail compliance receipt, inside tx.
func (s *Service) failResidue(ctx context.Context, tx bun.Tx, row *models.Erasure, residue []string) error {
	now := s.now()
	reason := "residue:" + strings.Join(residue, ",")
	if err := s.finish(ctx, tx, row, StatusFailed, func(q *bun.UpdateQuery) *bun.UpdateQuery {
		return q.Set("failure = ?", reason).Set("ended_at = ?", now).Set("target_ref = ''").Set("sealed_needles = NULL")
	}); err != nil {
		return err
	}
	_, err := receipts.Append(ctx, tx, row.SpaceID, receipts.Entry{
		Kind: receipts.KindCompliance, Action: "erasure.fail", ActorKey: row.RequestedBy,
		ObjectIDs: []string{row.ID}, Detail: map[string]any{"reason": reason},
	}, now)
	return err
}

// buildCertificate is the certificate of erasure row, ended now: its items in kind order and
// their total, the stores' reports, the content probe's reports (completed, or
// completed_with_residue with the count), the sinks, and what is not covered.
func (s *Service) buildCertificate(ctx context.Context, tx bun.Tx, row *models.Erasure, items itemSet, stores []StoreReport, names map[string][]erasure.Finding) (Certificate, error) {
	kinds := make([]string, 0, len(items))
	for k := range items {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	found, residueN, err := s.contentReports(ctx, tx, row, stores, names)
	if err != nil {
		return Certificate{}, err
	}
	status := StatusCompleted
	if residueN > 0 {
		status = StatusCompletedWithResidue
	}
	cert := Certificate{
		Type: CertificateType, ErasureID: row.ID, SpaceID: row.SpaceID, TargetKind: row.TargetKind, RequestedBy: row.RequestedBy,
		StartedAt: row.CreatedAt.UTC(), EndedAt: s.now(), Items: []Item{}, NotCovered: []string{},
		Stores: stores, Rounds: roundOf(row), WorkflowHistory: WorkflowHistoryNote, Status: status, Residue: residueN,
	}
	if err := certSinks(row, &cert); err != nil {
		return Certificate{}, err
	}
	for _, k := range kinds {
		cert.Items = append(cert.Items, *items[k])
		cert.Total += items[k].Count
	}
	// Never "nothing found" while the content probe found anything (issue 29 §1b).
	cert.NothingFound = cert.Total == 0 && found == 0
	if s.Registry().Get(StoreTurns) == nil {
		cert.NotCovered = append(cert.NotCovered, KindIdentityLink, KindTurn)
	}
	return cert, nil
}

// issueCertificate records cert inside tx: the erasure.certificate compliance receipt sealed
// in its own chain entry (so the certificate names its position, set in cert), the signature
// over the bytes stored, and erasure row's end in cert.Status.
func (s *Service) issueCertificate(ctx context.Context, tx bun.Tx, row *models.Erasure, cert *Certificate) error {
	var detail map[string]any
	if err := json.Unmarshal([]byte(mustJSON(*cert)), &detail); err != nil {
		return fmt.Errorf("compliance: certificate detail: %w", err)
	}
	rc, entry, err := receipts.AppendSealed(ctx, tx, row.SpaceID, receipts.Entry{
		Kind: receipts.KindCompliance, Action: "erasure.certificate", ActorKey: row.RequestedBy,
		ObjectIDs: []string{row.ID}, Detail: detail,
	}, cert.EndedAt)
	if err != nil {
		return err
	}
	cert.Receipt = &ChainPosition{ReceiptID: rc.ID, Seq: rc.Seq, PrevHash: entry.PrevHash, Hash: entry.Hash, LeafHash: rc.Hash}
	// Signed once, here, over the bytes stored: the route that serves it signs nothing, so
	// an edit of the stored certificate fails verification (issue 12 §4).
	stored, signature, err := s.signCertificate(*cert)
	if err != nil {
		return err
	}
	return s.finish(ctx, tx, row, cert.Status, func(q *bun.UpdateQuery) *bun.UpdateQuery {
		return q.Set("ended_at = ?", cert.EndedAt).Set("certificate = ?", stored).
			Set("certificate_signature = ?", signature).Set("target_ref = ''").Set("sealed_needles = NULL")
	})
}

// certSinks puts the sinks AwaitSinks recorded on row into cert (none recorded: none listed).
func certSinks(row *models.Erasure, cert *Certificate) error {
	if row.Sinks == "" {
		return nil
	}
	if err := decodeRecord(row.ID, "sinks", row.Sinks, &cert.Sinks); err != nil {
		return err
	}
	if len(cert.Sinks) > 0 {
		cert.FeedCursor = row.FeedCursor
	}
	return nil
}

// FailErasure marks a pending or running erasure failed with a short reason code (never
// personal data) and an "erasure.fail" receipt. What was erased so far stays erased; a new
// request finishes the rest. Failing a failed erasure again changes nothing; a completed one
// is fault.Conflict "invalid_transition".
func (s *Service) FailErasure(ctx context.Context, spaceID, id, reason string) error {
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		row, err := s.loadErasure(ctx, tx, spaceID, id)
		if err != nil {
			return err
		}
		if row.Status == StatusFailed {
			return nil
		}
		now := s.now()
		if err := s.finish(ctx, tx, row, StatusFailed, func(q *bun.UpdateQuery) *bun.UpdateQuery {
			return q.Set("failure = ?", reason).Set("ended_at = ?", now).Set("target_ref = ''").Set("sealed_needles = NULL")
		}); err != nil {
			return err
		}
		_, err = receipts.Append(ctx, tx, spaceID, receipts.Entry{
			Kind: receipts.KindCompliance, Action: "erasure.fail", ActorKey: row.RequestedBy,
			ObjectIDs: []string{row.ID}, Detail: map[string]any{"reason": reason},
		}, now)
		return err
	})
	if err != nil {
		return err
	}
	return s.destroyNeedles(ctx, id)
}

// setStatus moves row to status to inside tx (Transition decides), guarded by the status it
// was read with, so two racing moves cannot both win.
func (s *Service) setStatus(ctx context.Context, tx bun.Tx, row *models.Erasure, to string) error {
	return s.finish(ctx, tx, row, to, nil)
}

// finish is setStatus with more columns set by extra (may be nil).
func (s *Service) finish(ctx context.Context, tx bun.Tx, row *models.Erasure, to string, extra func(*bun.UpdateQuery) *bun.UpdateQuery) error {
	if err := Transition(row.Status, to); err != nil {
		return err
	}
	q := tx.NewUpdate().Model((*models.Erasure)(nil)).Set("status = ?", to).Where("id = ? AND status = ?", row.ID, row.Status)
	if extra != nil {
		q = extra(q)
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return fmt.Errorf("compliance: erasure status: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("compliance: erasure status: %w", err)
	} else if n != 1 {
		return fault.New(fault.Conflict, "invalid_transition", "the erasure changed status meanwhile")
	}
	row.Status = to
	return nil
}

// decodeRecord decodes the JSON column field of erasure id into v. A value that does not
// decode is fault.Conflict "corrupt_record": the erasure fails loudly rather than reading an
// empty set as "nothing found" (issue 12 §1).
func decodeRecord(id, field, raw string, v any) error {
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		return fault.New(fault.Conflict, "corrupt_record", "erasure %s: stored %s does not decode", id, field)
	}
	return nil
}

// scopeOf decodes the resolved scope of row: the handle hashes and profile ids.
func scopeOf(row *models.Erasure) (hashes, profileIDs []string, err error) {
	if err := decodeRecord(row.ID, "scope_hashes", row.ScopeHashes, &hashes); err != nil {
		return nil, nil, err
	}
	if err := decodeRecord(row.ID, "profile_ids", row.ProfileIDs, &profileIDs); err != nil {
		return nil, nil, err
	}
	return hashes, profileIDs, nil
}

// signCertificate returns cert's canonical JSON (RFC 8785) and, with a Signer, the JSON of
// its signature over those bytes (” without one).
func (s *Service) signCertificate(cert Certificate) (string, string, error) {
	doc, err := json.Marshal(cert)
	if err != nil {
		return "", "", fmt.Errorf("compliance: encode certificate: %w", err)
	}
	canon, err := signing.Canonical(doc)
	if err != nil {
		return "", "", fmt.Errorf("compliance: canonical certificate: %w", err)
	}
	if s.Signer == nil {
		return string(canon), "", nil
	}
	sig, err := s.Signer.Sign(canon)
	if err != nil {
		return "", "", fmt.Errorf("compliance: sign certificate: %w", err)
	}
	b, err := json.Marshal(sig)
	if err != nil {
		return "", "", fmt.Errorf("compliance: encode signature: %w", err)
	}
	return string(canon), string(b), nil
}
