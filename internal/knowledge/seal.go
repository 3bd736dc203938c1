package knowledge

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/models"
)

// Sealing (issue 29 §1, ER-1, KN-3). Every document has its own data key in the key store,
// DocumentKeyID(id). The document's title and body and its chunks' text and embedding are
// stored sealed under it (AES-256-GCM, keystore.Seal, the row id and column as associated
// data); deleting the document or erasing the subject it names destroys the key, so every
// copy of those bytes, in any backup, stops opening. What stays in clear is derived and
// rebuilt by the restore procedure from what still unseals (Restore): the full-text entries
// (FTS5 on SQLite, the search columns on PostgreSQL), the vector tables (sqlite-vec,
// pgvector) and the chunk rows' embedding column, which is the exact scan's vector index.
// A retrieval ranks on those derived copies and unseals only the chunks it returns.

// DocumentKeyID is the key-store id of document documentID's data key: "doc_" + the id (the
// prefix keeps it apart from profile ids, "sh_" subject keys and "cv_" conversation keys).
func DocumentKeyID(documentID string) string { return "doc_" + documentID }

// Associated data of each sealed column: the column and the row id, so that no sealed value
// opens in another row or column.
func adTitle(docID string) []byte    { return []byte("knowledge_documents.title\x00" + docID) }
func adBody(docID string) []byte     { return []byte("knowledge_documents.body\x00" + docID) }
func adText(chunkID string) []byte   { return []byte("knowledge_chunks.text\x00" + chunkID) }
func adVector(chunkID string) []byte { return []byte("knowledge_chunks.embedding\x00" + chunkID) }

// titleHash is the keyed hash of a document's title (the title filter compares it).
func (s *Service) titleHash(spaceID, title string) string {
	return s.Hasher.Hash(spaceID, "knowledge_title", title)
}

// keyring fetches document keys for one call, each at most once (key id -> key; nil: the
// key is gone). It is not safe for concurrent use.
type keyring struct {
	keys keystore.Store
	got  map[string][]byte
}

func (s *Service) keyring() *keyring {
	return &keyring{keys: s.Keys, got: map[string][]byte{}}
}

// key returns key id's data key, creating it when create is true; nil (no error) when the
// key store no longer holds it (destroyed: the document was deleted or erased).
func (k *keyring) key(ctx context.Context, id string, create bool) ([]byte, error) {
	if key, ok := k.got[id]; ok && (key != nil || !create) {
		return key, nil
	}
	if k.keys == nil {
		return nil, errors.New("knowledge: no key store")
	}
	key, err := k.keys.DataKey(ctx, id, create)
	if errors.Is(err, keystore.ErrNoKey) {
		k.got[id] = nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("knowledge: document key: %w", err)
	}
	k.got[id] = key
	return key, nil
}

// sealBytes seals plain under key with ad; empty plain is stored as nil (nothing to seal).
func sealBytes(key, plain, ad []byte) ([]byte, error) {
	if len(plain) == 0 {
		return nil, nil
	}
	out, err := keystore.Seal(key, plain, ad)
	if err != nil {
		return nil, fmt.Errorf("knowledge: seal: %w", err)
	}
	return out, nil
}

// openBytes opens what sealBytes stored (nil: empty).
func openBytes(key, sealed, ad []byte) ([]byte, error) {
	if len(sealed) == 0 {
		return nil, nil
	}
	out, err := keystore.Open(key, sealed, ad)
	if err != nil {
		return nil, fmt.Errorf("knowledge: open sealed value: %w", err)
	}
	return out, nil
}

// sealDocument moves row's clear title and body under key (its document key): the sealed
// columns are set, the title's keyed hash recorded, and the clear columns emptied.
func (s *Service) sealDocument(row *models.KnowledgeDocument, key []byte) error {
	title, err := sealBytes(key, []byte(row.Title), adTitle(row.ID))
	if err != nil {
		return err
	}
	body, err := sealBytes(key, []byte(row.Body), adBody(row.ID))
	if err != nil {
		return err
	}
	row.TitleHash = s.titleHash(row.SpaceID, row.Title)
	row.SealedKey, row.SealedTitle, row.SealedBody, row.Title, row.Body = DocumentKeyID(row.ID), title, body, "", ""
	return nil
}

// openDocument puts row's title and body back in clear (in place) and reports whether it
// could: false when its key is gone (then both are empty). A legacy clear row is left as it is.
func (k *keyring) openDocument(ctx context.Context, row *models.KnowledgeDocument) (bool, error) {
	if row.SealedKey == "" {
		return true, nil
	}
	key, err := k.key(ctx, row.SealedKey, false)
	if err != nil || key == nil {
		row.Title, row.Body = "", ""
		return false, err
	}
	title, err := openBytes(key, row.SealedTitle, adTitle(row.ID))
	if err != nil {
		return false, err
	}
	body, err := openBytes(key, row.SealedBody, adBody(row.ID))
	if err != nil {
		return false, err
	}
	row.Title, row.Body = string(title), string(body)
	return true, nil
}

// sealChunk moves row's clear text and embedding under key (its document's key, keyID). The
// clear embedding stays in the row as the exact scan's derived vector; heading and text are
// emptied (the full-text entries are written from the clear values by the caller).
func sealChunk(row *models.KnowledgeChunk, keyID string, key []byte) error {
	text, err := sealBytes(key, []byte(row.Text), adText(row.ID))
	if err != nil {
		return err
	}
	vec, err := sealBytes(key, row.Embedding, adVector(row.ID))
	if err != nil {
		return err
	}
	row.SealedKey, row.SealedText, row.SealedEmbedding, row.Heading, row.Text = keyID, text, vec, "", ""
	return nil
}

// openChunkText returns row's text and whether it could open it (false: its key is gone).
// A legacy clear row answers its text column.
func (k *keyring) openChunkText(ctx context.Context, sealedKey, chunkID string, sealed []byte, clear string) (string, bool, error) {
	if sealedKey == "" {
		return clear, true, nil
	}
	key, err := k.key(ctx, sealedKey, false)
	if err != nil || key == nil {
		return "", false, err
	}
	text, err := openBytes(key, sealed, adText(chunkID))
	if err != nil {
		return "", false, err
	}
	return string(text), true, nil
}

// openChunkVector returns row's embedding from its sealed copy (the clear column for a legacy
// row) and whether it could open it.
func (k *keyring) openChunkVector(ctx context.Context, row models.KnowledgeChunk) ([]byte, bool, error) {
	if row.SealedKey == "" {
		return row.Embedding, true, nil
	}
	key, err := k.key(ctx, row.SealedKey, false)
	if err != nil || key == nil {
		return nil, false, err
	}
	v, err := openBytes(key, row.SealedEmbedding, adVector(row.ID))
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// destroyKeys destroys the data keys of documents docIDs that the key store still holds and
// returns their key ids (existence only: a key is never opened to be found). The callers run
// it last inside the transaction that deletes the documents' rows: should the commit fail,
// the rows stay but no longer open, and retrieval, restore and a retried erasure treat them
// as gone.
func (s *Service) destroyKeys(ctx context.Context, docIDs []string) ([]string, error) {
	var out []string
	for _, id := range docIDs {
		k := DocumentKeyID(id)
		ok, err := s.Keys.Exists(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("knowledge: document key: %w", err)
		}
		if !ok {
			continue
		}
		if err := s.Keys.Destroy(ctx, k); err != nil {
			return nil, fmt.Errorf("knowledge: destroy document key: %w", err)
		}
		out = append(out, k)
	}
	return out, nil
}

// OpenDocuments unseals documents' titles and bodies in place with keys and returns those that
// open, in order (a document whose key is gone was deleted or erased and is left out), for
// readers outside the service such as the export feed (issue 33).
func OpenDocuments(ctx context.Context, keys keystore.Store, rows []models.KnowledgeDocument) ([]models.KnowledgeDocument, error) {
	k := &keyring{keys: keys, got: map[string][]byte{}}
	out := rows[:0]
	for i := range rows {
		ok, err := k.openDocument(ctx, &rows[i])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rows[i])
		}
	}
	return out, nil
}

// OpenChunks unseals chunks' texts in place with keys and returns those that open, in order
// (OpenDocuments).
func OpenChunks(ctx context.Context, keys keystore.Store, rows []models.KnowledgeChunk) ([]models.KnowledgeChunk, error) {
	k := &keyring{keys: keys, got: map[string][]byte{}}
	out := rows[:0]
	for i := range rows {
		text, ok, err := k.openChunkText(ctx, rows[i].SealedKey, rows[i].ID, rows[i].SealedText, rows[i].Text)
		if err != nil {
			return nil, err
		}
		if ok {
			rows[i].Text = text
			out = append(out, rows[i])
		}
	}
	return out, nil
}
