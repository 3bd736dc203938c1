package knowledge

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/models"
)

// contentPage is how many rows the content probe reads at a time.
const contentPage = 500

// Searched names what the knowledge store's content probe reads.
func (Eraser) Searched() string {
	return "knowledge_documents.title and body, knowledge_chunks.heading and text, unsealed with each document's key (what the full-text index and retrieval serve)"
}

// ProbeContent finds the documents of t's space (every version, any policy, any status) whose
// title, stored body or chunks name t's subject (issue 29 §1b): under the mask and refuse
// policies a document ingested before her profile existed passes the gate with her name (and
// masking misses what it does not know), and stays retrievable. One Finding per document, of
// kind KindDocument, with the strongest match over its texts.
func (e Eraser) ProbeContent(ctx context.Context, idb bun.IDB, t erasure.Target) ([]erasure.Finding, error) {
	if t.Content == nil {
		return nil, nil
	}
	best := map[string]string{}
	var order []string
	note := func(doc, match string) {
		if match == "" {
			return
		}
		if _, ok := best[doc]; !ok {
			order = append(order, doc)
		}
		if best[doc] != erasure.MatchHandle {
			best[doc] = match
		}
	}
	kr := e.S.keyring()
	if err := probeDocuments(ctx, idb, kr, t, note); err != nil {
		return nil, err
	}
	if err := probeChunks(ctx, idb, kr, t, note); err != nil {
		return nil, err
	}
	out := make([]erasure.Finding, 0, len(order))
	for _, d := range order {
		out = append(out, erasure.Finding{Kind: KindDocument, ID: d, Where: "knowledge_documents, knowledge_chunks", Match: best[d]})
	}
	return out, nil
}

// probeDocuments calls note for each document of t's space with the match of its title and
// body, unsealed (a document whose key is gone holds nothing readable).
func probeDocuments(ctx context.Context, idb bun.IDB, kr *keyring, t erasure.Target, note func(doc, match string)) error {
	after := ""
	for {
		var rows []models.KnowledgeDocument
		if err := idb.NewSelect().Model(&rows).Column("id", "title", "body", "sealed_key", "sealed_title", "sealed_body").Where("space_id = ? AND id > ?", t.SpaceID, after).
			Order("id ASC").Limit(contentPage).Scan(ctx); err != nil {
			return fmt.Errorf("knowledge: content probe documents: %w", err)
		}
		for _, r := range rows {
			if _, err := kr.openDocument(ctx, &r); err != nil {
				return err
			}
			note(r.ID, t.Content.MatchAll(r.Title, r.Body))
		}
		if len(rows) < contentPage {
			return nil
		}
		after = rows[len(rows)-1].ID
	}
}

// probeChunks calls note for each chunk of t's space (by its document) with the match of its
// heading and text, unsealed.
func probeChunks(ctx context.Context, idb bun.IDB, kr *keyring, t erasure.Target, note func(doc, match string)) error {
	after := ""
	for {
		var rows []models.KnowledgeChunk
		if err := idb.NewSelect().Model(&rows).Column("id", "document_id", "heading", "text", "sealed_key", "sealed_text").Where("space_id = ? AND id > ?", t.SpaceID, after).
			Order("id ASC").Limit(contentPage).Scan(ctx); err != nil {
			return fmt.Errorf("knowledge: content probe chunks: %w", err)
		}
		for _, r := range rows {
			text, _, err := kr.openChunkText(ctx, r.SealedKey, r.ID, r.SealedText, r.Text)
			if err != nil {
				return err
			}
			note(r.DocumentID, t.Content.MatchAll(r.Heading, text))
		}
		if len(rows) < contentPage {
			return nil
		}
		after = rows[len(rows)-1].ID
	}
}

// EraseFound deletes, inside tx, the documents found (kind KindDocument) with their chunks,
// vectors and full-text entries and their data keys, as a subject erasure deletes hers.
func (e Eraser) EraseFound(ctx context.Context, tx bun.Tx, spaceID string, found []erasure.Finding) (erasure.Reach, error) {
	docs := erasure.IDsOf(found, KindDocument)
	if len(docs) != len(found) {
		return nil, fmt.Errorf("knowledge: erase found: a finding of another store")
	}
	if len(docs) == 0 {
		return erasure.Reach{}, nil
	}
	var present, chunks []string
	if err := tx.NewSelect().Model((*models.KnowledgeDocument)(nil)).Column("id").
		Where("space_id = ? AND id IN (?)", spaceID, bun.In(docs)).Order("id ASC").Scan(ctx, &present); err != nil {
		return nil, fmt.Errorf("knowledge: erase found: %w", err)
	}
	if err := tx.NewSelect().Model((*models.KnowledgeChunk)(nil)).Column("id").
		Where("space_id = ? AND document_id IN (?)", spaceID, bun.In(docs)).Order("id ASC").Scan(ctx, &chunks); err != nil {
		return nil, fmt.Errorf("knowledge: erase found: %w", err)
	}
	return e.erase(ctx, tx, spaceID, present, chunks)
}
