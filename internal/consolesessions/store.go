// Package consolesessions is the store of the Console's server-side sessions (the tables
// console_sessions and console_form_uses): the Console's handlers (api/console) keep the
// cookies, tokens and CSRF checks and reach the rows only through Store (issue 30 §3). Rows
// are keyed by the SHA-256 of the session's token (the token itself is never stored); a
// session's pending flash is sealed by the Console under a key derived from the token, so
// the database cannot open it. Errors are the database's, wrapped.
package consolesessions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// ActionSignIn is the action of the admin receipt a sign-in leaves.
const ActionSignIn = "console.sign_in"

// Store is the Console's sessions in DB (required).
type Store struct {
	DB *bun.DB
}

// Start stores session row (its ID the token's hash) for the person key row.PersonKey of
// space row.SpaceID, in one transaction with a console.sign_in admin receipt by that key at
// now. It first sweeps the sessions past their expiry (expires_at) or idle at now (seen_at
// idle or more ago) and the spent form tokens older than maxAge (their sessions cannot be
// alive any more).
func (s Store) Start(ctx context.Context, row models.ConsoleSession, now time.Time, idle, maxAge time.Duration) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*models.ConsoleSession)(nil)).
			Where("expires_at <= ? OR seen_at <= ?", now, now.Add(-idle)).Exec(ctx); err != nil {
			return fmt.Errorf("consolesessions: sweep sessions: %w", err)
		}
		if _, err := tx.NewDelete().Model((*models.ConsoleFormUse)(nil)).Where("used_at <= ?", now.Add(-maxAge)).Exec(ctx); err != nil {
			return fmt.Errorf("consolesessions: sweep form uses: %w", err)
		}
		if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
			return fmt.Errorf("consolesessions: insert: %w", err)
		}
		_, err := receipts.Append(ctx, tx, row.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: ActionSignIn, ActorKey: row.PersonKey,
		}, now)
		return err
	})
}

// Get returns session id (a token's hash) and true, or false when there is none.
func (s Store) Get(ctx context.Context, id string) (models.ConsoleSession, bool, error) {
	var row models.ConsoleSession
	err := s.DB.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return row, false, nil
	}
	if err != nil {
		return row, false, fmt.Errorf("consolesessions: load: %w", err)
	}
	return row, true, nil
}

// Touch records that session id was seen at now (the idle expiry counts from it).
func (s Store) Touch(ctx context.Context, id string, now time.Time) error {
	if _, err := s.DB.NewUpdate().Model((*models.ConsoleSession)(nil)).Set("seen_at = ?", now).Where("id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("consolesessions: touch: %w", err)
	}
	return nil
}

// End deletes session id (a missing one is not an error).
func (s Store) End(ctx context.Context, id string) error {
	if _, err := s.DB.NewDelete().Model((*models.ConsoleSession)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("consolesessions: end: %w", err)
	}
	return nil
}

// SignOut deletes session id and its spent form tokens; both deletes are tried, and their
// errors returned together.
func (s Store) SignOut(ctx context.Context, id string) error {
	err := s.End(ctx, id)
	if _, ferr := s.DB.NewDelete().Model((*models.ConsoleFormUse)(nil)).Where("session_id = ?", id).Exec(ctx); ferr != nil {
		err = errors.Join(err, fmt.Errorf("consolesessions: forget form uses: %w", ferr))
	}
	return err
}

// SpendForm spends form token use.ID (a token's hash) of session use.SessionID at
// use.UsedAt, atomically: true when this call spent it, false when it was spent already.
func (s Store) SpendForm(ctx context.Context, use models.ConsoleFormUse) (bool, error) {
	res, err := s.DB.NewInsert().Model(&use).On("CONFLICT (id) DO NOTHING").Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("consolesessions: spend form: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("consolesessions: spend form: %w", err)
	}
	return n == 1, nil
}

// GiveBackForm unspends form token id (its action was refused: the form may be sent again).
func (s Store) GiveBackForm(ctx context.Context, id string) error {
	if _, err := s.DB.NewDelete().Model((*models.ConsoleFormUse)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("consolesessions: give back form: %w", err)
	}
	return nil
}

// SetFlash stores sealed as session id's pending flash, replacing any.
func (s Store) SetFlash(ctx context.Context, id, sealed string) error {
	if _, err := s.DB.NewUpdate().Model((*models.ConsoleSession)(nil)).Set("flash = ?", sealed).Where("id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("consolesessions: set flash: %w", err)
	}
	return nil
}

// Flash returns session id's pending sealed flash ("" when none, or no such session).
func (s Store) Flash(ctx context.Context, id string) (string, error) {
	var sealed string
	err := s.DB.NewSelect().Model((*models.ConsoleSession)(nil)).Column("flash").Where("id = ?", id).Scan(ctx, &sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("consolesessions: flash: %w", err)
	}
	return sealed, nil
}

// TakeFlash empties session id's pending flash if it is still sealed (a compare-and-swap):
// true when this call emptied it, so of two readers at once only one shows it.
func (s Store) TakeFlash(ctx context.Context, id, sealed string) (bool, error) {
	res, err := s.DB.NewUpdate().Model((*models.ConsoleSession)(nil)).Set("flash = ''").
		Where("id = ? AND flash = ?", id, sealed).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("consolesessions: take flash: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("consolesessions: take flash: %w", err)
	}
	return n == 1, nil
}
