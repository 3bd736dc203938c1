package notes

import (
	"context"
	"slices"
	"strings"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/redact"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// CodeInstruction is the refusal of a note that reads as an instruction to its reader
// (GATE-3, MS-7): 422 with detail "classes".
const CodeInstruction = "instruction_in_agent_memory"

// InstructionClasses returns the instruction classes of a note's title, body and tags
// (redact.DetectInstructions over redact.InstructionText), sorted; nil when none.
func InstructionClasses(title, body string, tags []string) []string {
	found := redact.DetectInstructions(redact.InstructionText(title, body, tags))
	if len(found) == 0 {
		return nil
	}
	out := make([]string, len(found))
	for i, c := range found {
		out[i] = string(c)
	}
	return out
}

// InstructionRefused is the refusal of a note whose text reads as an instruction to its
// reader: fault.Unprocessable "instruction_in_agent_memory" with detail "classes" (sorted
// class names: override, privilege, exfiltration, invisible), never the text.
func InstructionRefused(classes []string) error {
	return fault.New(fault.Unprocessable, CodeInstruction,
		"the note reads as an instruction to the agents that read it (%s); agent memory holds procedures, never commands to its reader, claims of privilege, requests to send data out or hidden text: rewrite it",
		strings.Join(classes, ", ")).With("classes", classes)
}

// RefusedClasses reports the classes of an instruction refusal (InstructionRefused) in
// err's chain: the hook for a space that sends instruction hits to review instead (the
// refusal implies the personal-data gate passed; see CheckContent).
func RefusedClasses(err error) ([]string, bool) {
	fe := fault.As(err)
	if fe == nil || fe.Code != CodeInstruction {
		return nil, false
	}
	cs, _ := fe.Details["classes"].([]string)
	return cs, true
}

// CheckContent is the whole gate of a note's content, the one every path that stores a
// note runs (REST and MCP writes and edits, proposals, approvals with edits, the
// distillation's Draft, the Console): the personal-data gate (local layer with the name
// layer, then the model layer when configured, over GateText) and the instruction detector
// (GATE-3) over title, body and tags.
//
// Order: personal data first. A note with personal data is refused with
// "personal_data_in_agent_memory" and its kinds whatever else it holds (it may not be kept
// in any form), and the same error lists "classes" too when the text also reads as an
// instruction, so one answer names everything to rewrite. Only a note the personal-data
// gate passed is refused with "instruction_in_agent_memory" and its classes
// (InstructionRefused). A detector that does not answer is fault.Unavailable as for Check.
//
// With features f (nil: every hit is refused), a hit the space sends to review
// (f.GateReview: "name" under agent_memory.gate.names "review", "instruction" under
// agent_memory.gate.instructions "review"; GATE-2, GATE-3) is not refused when every hit is
// reviewable: CheckContent returns those kinds, sorted, and the caller turns an agent's
// write into a proposal (or, for a person's own write or an approval, stores it). Nothing
// found gives (nil, nil).
func (s *Service) CheckContent(ctx context.Context, spaceID, title, body string, tags []string, ev *Evidence, f *spaces.Features) ([]string, error) {
	classes := InstructionClasses(title, body, tags)
	review, err := s.gate(ctx, spaceID, GateText(title, body, tags, ev), true, f)
	if err != nil {
		if fe := fault.As(err); fe != nil && fe.Code == CodePersonalData && len(classes) > 0 {
			fe = fe.With("classes", classes)
			fe.Message += "; it also reads as an instruction to its reader (" + strings.Join(classes, ", ") + ")"
		}
		return nil, err
	}
	if len(classes) == 0 {
		return review, nil
	}
	if f == nil || !f.GateReview(spaces.GateKindInstruction) {
		return nil, InstructionRefused(classes)
	}
	review = append(review, spaces.GateKindInstruction)
	slices.Sort(review)
	return slices.Compact(review), nil
}
