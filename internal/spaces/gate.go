package spaces

// Gate actions of the features document's agent_memory.gate members (GATE-2, GATE-3).
const (
	// GateRefuse refuses a write with a hit (422): the default.
	GateRefuse = "refuse"
	// GateReview turns an agent's write with a hit into a proposal a person approves, as
	// writes: human_only does (AM-8).
	GateReview = "review"
)

// Kinds of gate hit a space may send to review (AgentMemoryGate).
const (
	// GateKindName is a person's name found by the local name layer or the model (GATE-2).
	GateKindName = "name"
	// GateKindInstruction is a note that tries to instruct or take over its reader (GATE-3).
	GateKindInstruction = "instruction"
)

// AgentMemoryGate says what a gate hit of each reviewable kind does (features document
// agent_memory.gate, GATE-2, GATE-3): Names for person names (kind "name"), Instructions for
// instruction/poisoning hits; each is "refuse" (the default, also when absent) or "review".
// Every other kind of personal data (e-mail, phone, CPF, CNPJ, known subjects) is always
// refused.
type AgentMemoryGate struct {
	Names        string `json:"names,omitempty"`
	Instructions string `json:"instructions,omitempty"`
}

// GateReview reports whether a gate hit of kind (GateKindName "name", GateKindInstruction
// "instruction") is sent to review instead of refused (GATE-2, GATE-3). Any other kind is
// never reviewable: false.
func (f Features) GateReview(kind string) bool {
	g := f.AgentMemory.Gate
	if g == nil {
		return false
	}
	switch kind {
	case GateKindName:
		return g.Names == GateReview
	case GateKindInstruction:
		return g.Instructions == GateReview
	}
	return false
}

// validateGate checks agent_memory.gate: each member "refuse", "review" or absent; errors
// are fault.Invalid naming the member (agent_memory.gate.names, agent_memory.gate.instructions).
func validateGate(g *AgentMemoryGate) error {
	if g == nil {
		return nil
	}
	for _, m := range []struct{ name, v string }{
		{"agent_memory.gate.names", g.Names},
		{"agent_memory.gate.instructions", g.Instructions},
	} {
		switch m.v {
		case "", GateRefuse, GateReview:
		default:
			return invalidMember(m.name, `must be "refuse" or "review"`)
		}
	}
	return nil
}
