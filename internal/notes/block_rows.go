package notes

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/models"
)

// blockRow is one note version as a block is built from it: the row and its decoded tags.
// A note id names one immutable version (an edit is a new id; a retire or an expiry only
// drops the id from the deliverable ones), so a kept row is never stale; only an erasure
// deletes it, and then the row leaves the cache with the space's blocks (MS-4).
type blockRow struct {
	note models.Note
	tags []string
}

// maxCachedRows bounds the rows blockCache keeps over every space; it is emptied when full.
const maxCachedRows = 20000

// loadBlockRows returns the rows of the deliverable notes ids (sorted) of v's space: those kept
// in blockCache (under the space's note-erasure revision erased) and the others loaded in
// statements of at most rowBatch ids, checked deliverable to v at now and then kept. Issue 27:
// a note write changes the ids of the next block, which then loads one row instead of every
// row. ok is false when a loaded id is no longer deliverable (a retire, an expiry or an
// erasure since the ids were read): the caller then builds from the store as before.
func (s *Service) loadBlockRows(ctx context.Context, v viewer, ids []string, now time.Time, erased int64) ([]blockRow, bool, error) {
	rows, missing := cachedRows(v.spaceID, erased, ids)
	for start := 0; start < len(missing); start += rowBatch {
		part := missing[start:min(start+rowBatch, len(missing))]
		var loaded []models.Note
		if err := deliverable(s.DB.NewSelect().Model(&loaded), v, now).Where("n.id IN (?)", bun.In(part)).Scan(ctx); err != nil {
			return nil, false, fmt.Errorf("notes: block rows: %w", err)
		}
		loaded, err := s.openNotes(ctx, loaded)
		if err != nil {
			return nil, false, err
		}
		if len(loaded) != len(part) {
			return nil, false, nil
		}
		fresh := make([]blockRow, len(loaded))
		for i, n := range loaded {
			fresh[i] = blockRow{note: n, tags: noterows.DecodeTags(n.Tags)}
		}
		storeRows(v.spaceID, erased, fresh)
		rows = append(rows, fresh...)
	}
	return rows, true, nil
}

// rowBatch is the most ids one statement of loadBlockRows names.
const rowBatch = 500

// cachedRows returns the rows of ids kept for space at note-erasure revision erased, and the
// ids it does not keep. Rows kept at another revision are dropped with the space's blocks.
func cachedRows(spaceID string, erased int64, ids []string) (rows []blockRow, missing []string) {
	blockCache.Lock()
	defer blockCache.Unlock()
	sb := blockCache.spaces[spaceID]
	if sb != nil && sb.erased != erased {
		dropSpaceLocked(spaceID)
		sb = nil
	}
	rows = make([]blockRow, 0, len(ids))
	for _, id := range ids {
		if r, ok := sb.row(id); ok {
			rows = append(rows, r)
		} else {
			missing = append(missing, id)
		}
	}
	return rows, missing
}

// row returns the row of id kept in sb (a nil sb keeps none).
func (sb *spaceBlocks) row(id string) (blockRow, bool) {
	if sb == nil {
		return blockRow{}, false
	}
	r, ok := sb.rows[id]
	return r, ok
}

// storeRows keeps rows for space at note-erasure revision erased.
func storeRows(spaceID string, erased int64, rows []blockRow) {
	blockCache.Lock()
	defer blockCache.Unlock()
	if blockCache.rows+len(rows) > maxCachedRows {
		blockCache.spaces, blockCache.n, blockCache.rows = map[string]*spaceBlocks{}, 0, 0
	}
	sb := spaceLocked(spaceID, erased)
	for _, r := range rows {
		if _, ok := sb.rows[r.note.ID]; !ok {
			blockCache.rows++
		}
		sb.rows[r.note.ID] = r
	}
}

// spaceLocked returns the space's entry at note-erasure revision erased, replacing one kept
// at another revision (blockCache locked).
func spaceLocked(spaceID string, erased int64) *spaceBlocks {
	sb := blockCache.spaces[spaceID]
	if sb == nil || sb.erased != erased {
		dropSpaceLocked(spaceID)
		sb = &spaceBlocks{erased: erased, blocks: map[string]Block{}, rows: map[string]blockRow{}}
		blockCache.spaces[spaceID] = sb
	}
	return sb
}

// dropSpaceLocked forgets the space's blocks and rows (blockCache locked).
func dropSpaceLocked(spaceID string) {
	if sb := blockCache.spaces[spaceID]; sb != nil {
		blockCache.n -= len(sb.blocks)
		blockCache.rows -= len(sb.rows)
		delete(blockCache.spaces, spaceID)
	}
}
