package notes

import (
	"context"
	"regexp"
	"slices"
	"time"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/redact"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// Detector is the optional model layer of the personal-data gate (AM-6): it returns the kinds
// of personal data it finds in text (e.g. "email", "name"), never the values. An error or a
// call that outlives the gate's timeout makes the write fail retryably; nothing is stored
// unchecked.
type Detector interface {
	DetectKinds(ctx context.Context, text string) ([]string, error)
}

// DefaultDetectorTimeout bounds one call to the model layer.
const DefaultDetectorTimeout = 10 * time.Second

// Codes of the gate's refusals.
const (
	CodePersonalData        = "personal_data_in_agent_memory"
	CodeDetectorUnavailable = "detector_unavailable"
)

var kindPattern = regexp.MustCompile(`^[a-z][a-z_]{0,31}$`)

// Check runs the personal-data gate over note text for space spaceID: the local layer always
// (e-mail, phone, CPF, CNPJ, the space's known subjects, under the space's default phone
// region, and persons' names, GATE-2), then the model layer when configured. It returns nil
// when text may be stored; fault.Unprocessable "personal_data_in_agent_memory" with detail
// "kinds" (sorted kinds, never values) when it may not; fault.Unavailable
// "detector_unavailable" with RetryAfter when the model layer is configured and fails or does
// not answer in time. Every hit is refused, whatever agent_memory.gate says (CheckContent
// applies that setting).
func (s *Service) Check(ctx context.Context, spaceID, text string) error {
	_, err := s.gate(ctx, spaceID, text, true, nil)
	return err
}

// CheckDocument is Check without the name layer, for knowledge documents (KN): a manual names
// its authors, product people and places far more often than a note does, and the local name
// rules are measured on notes only (docs/gate.md). The known subjects of the space are still
// found, and the model layer still runs when configured.
func (s *Service) CheckDocument(ctx context.Context, spaceID, text string) error {
	_, err := s.gate(ctx, spaceID, text, false, nil)
	return err
}

// DocumentGate is the knowledge store's gate: Check is Service.CheckDocument.
type DocumentGate struct{ S *Service }

// Check runs Service.CheckDocument.
func (g DocumentGate) Check(ctx context.Context, spaceID, text string) error {
	return g.S.CheckDocument(ctx, spaceID, text)
}

// gate runs both layers (names: the local name layer on) and decides: refused (an error), sent
// to review (the kinds, when f is given and every kind found is reviewable under it), or
// stored (nil, nil). The model layer is asked also after a reviewable local hit, so a kind
// only the model sees (an address) is still refused.
func (s *Service) gate(ctx context.Context, spaceID, text string, names bool, f *spaces.Features) ([]string, error) {
	opt, err := s.Subjects.Options(ctx, spaceID)
	if err != nil {
		return nil, err
	}
	opt.Names = names
	var ks []string
	for _, k := range redact.Detect(text, opt) {
		ks = append(ks, string(k))
	}
	if len(ks) > 0 && !reviewable(ks, f) {
		return nil, Refused(ks)
	}
	if s.Detector != nil {
		mk, err := s.detectWithModel(ctx, text)
		if err != nil {
			return nil, err
		}
		ks = append(ks, mk...)
	}
	switch {
	case len(ks) == 0:
		return nil, nil
	case !reviewable(ks, f):
		return nil, Refused(ks)
	}
	slices.Sort(ks)
	return slices.Compact(ks), nil
}

// reviewable reports whether every kind of ks goes to review under features f (nil: none does).
func reviewable(ks []string, f *spaces.Features) bool {
	if f == nil {
		return false
	}
	for _, k := range ks {
		if !f.GateReview(k) {
			return false
		}
	}
	return true
}

// Refused is the gate's refusal with the kinds found ks (fault.Unprocessable
// personal_data_in_agent_memory, kinds sorted and unique, never values); proposals also
// rebuilds it from a refusal recorded on a staged decision and answered later.
func Refused(ks []string) error {
	slices.Sort(ks)
	ks = slices.Compact(ks)
	return fault.New(fault.Unprocessable, CodePersonalData,
		"the note carries personal data (%d kind(s)); agent memory holds no customer data: rewrite it without them", len(ks)).
		With("kinds", ks)
}

// detectWithModel calls the Detector within the timeout, even if the Detector ignores its
// context. Kinds the model returns are reduced to short lower-case words so that a value can
// never come back through a kind; anything else reads "personal_data".
func (s *Service) detectWithModel(ctx context.Context, text string) ([]string, error) {
	timeout := s.DetectorTimeout
	if timeout <= 0 {
		timeout = DefaultDetectorTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type answer struct {
		kinds []string
		err   error
	}
	ch := make(chan answer, 1)
	go func() {
		ks, err := s.Detector.DetectKinds(ctx, text)
		ch <- answer{ks, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-ctx.Done():
		a.err = ctx.Err()
	}
	if a.err != nil {
		e := fault.New(fault.Unavailable, CodeDetectorUnavailable, "the personal-data detector did not answer; nothing was stored: retry later")
		e.RetryAfter = timeout
		return nil, e
	}
	out := make([]string, 0, len(a.kinds))
	for _, k := range a.kinds {
		if kindPattern.MatchString(k) {
			out = append(out, k)
		} else {
			out = append(out, "personal_data")
		}
	}
	return out, nil
}
