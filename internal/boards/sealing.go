package boards

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
)

// Sealing (issue 29 §1, ER-1). A board's body, and every history row's, is sealed under the
// board's own key (BoardKeyID) and, in layers on top of it, under the key of every customer
// its subject fields name at that version (state.SubjectKeyID of each handle hash, the keys
// working memory seals a customer's states under). A subject erasure destroys the subject's
// keys and deletes the boards naming her, and every delete of a board (deleteBoards: a
// subject erasure, or a board the content probe tied to the subject) destroys the board's key
// first, so every copy of those rows in any backup stops opening; a history row of a board
// that named her at an older version stops opening too, even when the board names someone
// else now. Boards have no delete of their own. A sealed body names its keys in clear (the
// keyed handle hashes board_subjects holds anyway) so that a row opens without reading
// another. Without a key store (Service.Keys nil) bodies are stored in clear; a board stored
// in clear before is sealed at its next write. field_times (field names and dates), writers,
// versions and sizes stay in clear: operators read them (Meta).

// BoardKeyID is the key-store id of the key sealing every version of board boardID. The
// "bk_" prefix keeps it apart from the other key ids ("sh_", "cv_", "nl_", "np_", "prof_").
func BoardKeyID(boardID string) string { return "bk_" + boardID }

// sealedPrefix starts a sealed body: "s1:<key ids, comma separated>:<base64 of the sealed
// bytes>". A JSON object never starts with 's'.
const sealedPrefix = "s1:"

// bodyAD is the additional data of the seal of board boardID's body at version: the board
// row and its history row of one version hold the same sealed text.
func bodyAD(boardID string, version int64) []byte {
	return []byte("board:" + boardID + ":" + strconv.FormatInt(version, 10))
}

// sealingKeys lists the key ids a body of boardID naming subjectHashes is sealed under,
// innermost first.
func sealingKeys(boardID string, subjectHashes []string) []string {
	ids := []string{BoardKeyID(boardID)}
	for _, h := range subjectHashes {
		ids = append(ids, state.SubjectKeyID(h))
	}
	return ids
}

// seal returns canon as stored for board boardID at version, naming subjectHashes (keys
// created when missing); canon itself without a key store.
func (s *Service) seal(ctx context.Context, boardID string, version int64, subjectHashes []string, canon []byte) (string, error) {
	if s.Keys == nil {
		return string(canon), nil
	}
	ids := sealingKeys(boardID, subjectHashes)
	out := canon
	for _, id := range ids {
		key, err := s.Keys.DataKey(ctx, id, true)
		if err != nil {
			return "", fmt.Errorf("boards: data key: %w", err)
		}
		if out, err = keystore.Seal(key, out, bodyAD(boardID, version)); err != nil {
			return "", fmt.Errorf("boards: seal: %w", err)
		}
	}
	return sealedPrefix + strings.Join(ids, ",") + ":" + base64.StdEncoding.EncodeToString(out), nil
}

// open returns the clear text of body, stored for board boardID at version: ok is false when
// one of its keys is gone (the board, or a customer it named, was erased after this copy of
// the row was taken) or the bytes do not open under it; the caller treats the row as never
// written. A body stored in clear is returned as it is.
func open(ctx context.Context, keys keystore.Store, boardID string, version int64, body string) (string, bool, error) {
	if !strings.HasPrefix(body, sealedPrefix) {
		return body, true, nil
	}
	if keys == nil {
		return "", false, nil
	}
	rest := body[len(sealedPrefix):]
	i := strings.IndexByte(rest, ':')
	if i < 0 {
		return "", false, nil
	}
	out, err := base64.StdEncoding.DecodeString(rest[i+1:])
	if err != nil {
		return "", false, nil
	}
	ids := strings.Split(rest[:i], ",")
	for j := len(ids) - 1; j >= 0; j-- {
		key, err := keys.DataKey(ctx, ids[j], false)
		if errors.Is(err, keystore.ErrNoKey) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("boards: data key: %w", err)
		}
		if out, err = keystore.Open(key, out, bodyAD(boardID, version)); err != nil {
			return "", false, nil // sealed under an older, destroyed key of the same name
		}
	}
	return string(out), true, nil
}

// openBoard unseals row's body in place; ok is false when it no longer opens.
func (s *Service) openBoard(ctx context.Context, row *models.Board) (bool, error) {
	body, ok, err := open(ctx, s.Keys, row.ID, row.Version, row.Body)
	if err != nil || !ok {
		return false, err
	}
	row.Body = body
	return true, nil
}

// openVersion unseals a history row's body in place; ok is false when it no longer opens.
func (s *Service) openVersion(ctx context.Context, v *models.BoardVersion) (bool, error) {
	body, ok, err := open(ctx, s.Keys, v.BoardID, v.Version, v.Body)
	if err != nil || !ok {
		return false, err
	}
	v.Body = body
	return true, nil
}

// destroyKeys destroys the keys of boards ids. deleteBoards calls it before deleting the
// rows, inside its transaction: a retry after a failure finds the rows and destroys again; a
// rollback leaves rows that no longer open (read as never written), never rows whose key
// survived their delete.
func (s *Service) destroyKeys(ctx context.Context, ids []string) error {
	if s == nil || s.Keys == nil {
		return nil
	}
	for _, id := range ids {
		if err := s.Keys.Destroy(ctx, BoardKeyID(id)); err != nil {
			return fmt.Errorf("boards: destroy key: %w", err)
		}
	}
	return nil
}

// DropUnreadable deletes, inside idb, every board whose body no longer opens (with its
// history and links) and every history row that no longer opens, and returns how many rows
// it deleted: the restore procedure's step for boards (`agentmemory restore`), run on a
// restored copy so that what an erasure destroyed the keys of leaves the tables too. Without
// a key store it does nothing.
func (s *Service) DropUnreadable(ctx context.Context, idb bun.IDB) (int, error) {
	if s.Keys == nil {
		return 0, nil
	}
	var gone []string
	err := scanPages(ctx, idb, func(rows []models.Board) error {
		for i := range rows {
			ok, err := s.openBoard(ctx, &rows[i])
			if err != nil {
				return err
			}
			if !ok {
				gone = append(gone, rows[i].ID)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	n, err := dropRows(ctx, idb, gone)
	if err != nil {
		return 0, err
	}
	m, err := s.dropUnreadableVersions(ctx, idb)
	return n + m, err
}

// scanPages calls fn with every board row (id, version, body), a page at a time in id order.
func scanPages(ctx context.Context, idb bun.IDB, fn func([]models.Board) error) error {
	after := ""
	for {
		var rows []models.Board
		if err := idb.NewSelect().Model(&rows).Column("id", "space_id", "version", "body").Where("id > ?", after).
			Order("id ASC").Limit(probePage).Scan(ctx); err != nil {
			return fmt.Errorf("boards: list boards: %w", err)
		}
		if err := fn(rows); err != nil {
			return err
		}
		if len(rows) < probePage {
			return nil
		}
		after = rows[len(rows)-1].ID
	}
}

// dropRows deletes boards ids with their history and links inside idb, and returns how many
// rows it deleted in all.
func dropRows(ctx context.Context, idb bun.IDB, ids []string) (int, error) {
	n := 0
	for len(ids) > 0 {
		page := ids[:min(len(ids), probePage)]
		ids = ids[len(page):]
		for _, m := range []any{(*models.BoardVersion)(nil), (*models.BoardSubject)(nil), (*models.Board)(nil)} {
			col := "board_id"
			if _, ok := m.(*models.Board); ok {
				col = "id"
			}
			res, err := idb.NewDelete().Model(m).Where(col+" IN (?)", bun.In(page)).Exec(ctx)
			if err != nil {
				return 0, fmt.Errorf("boards: drop unreadable: %w", err)
			}
			k, err := res.RowsAffected()
			if err != nil {
				return 0, fmt.Errorf("boards: drop unreadable: %w", err)
			}
			n += int(k)
		}
	}
	return n, nil
}

// dropUnreadableVersions deletes the history rows that no longer open (their board still
// opens: it names other keys now).
func (s *Service) dropUnreadableVersions(ctx context.Context, idb bun.IDB) (int, error) {
	var rows []models.BoardVersion
	if err := idb.NewSelect().Model(&rows).Where("body LIKE ?", sealedPrefix+"%").Scan(ctx); err != nil {
		return 0, fmt.Errorf("boards: list board versions: %w", err)
	}
	n := 0
	for i := range rows {
		ok, err := s.openVersion(ctx, &rows[i])
		if err != nil {
			return 0, err
		}
		if ok {
			continue
		}
		if _, err := idb.NewDelete().Model((*models.BoardVersion)(nil)).
			Where("board_id = ? AND version = ?", rows[i].BoardID, rows[i].Version).Exec(ctx); err != nil {
			return 0, fmt.Errorf("boards: drop unreadable: %w", err)
		}
		n++
	}
	return n, nil
}
