package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentmemory/agentmemory/sdk"
)

// KnowledgeMode is how an integration reaches the space's knowledge bases (issue 28).
type KnowledgeMode string

// The knowledge modes.
const (
	// KnowledgeOff (the default, also "") uses no knowledge.
	KnowledgeOff KnowledgeMode = "off"
	// KnowledgeBeforeCall runs a context call with knowledge {kbs: KnowledgeBases, query: the
	// latest user message} before each model call and places its context after the block.
	KnowledgeBeforeCall KnowledgeMode = "before_call"
	// KnowledgeTool offers search_knowledge, where the key may read knowledge.
	KnowledgeTool KnowledgeMode = "tool"
)

// Options are the integration options every SDK takes (issue 28, spelled for Go).
type Options struct {
	// AgentMemory (nil: true) fetches the notes block through the context call and places it
	// after the instructions, before the customer's context; it also offers
	// search_agent_memory where the key may read notes. Set it to new(false) to turn it off.
	AgentMemory *bool
	// WriteAgentMemory offers remember, only when the key holds agent_memory:write (when the
	// MCP server lists it for the key).
	WriteAgentMemory bool
	// Knowledge is the retrieval mode: KnowledgeOff (default), KnowledgeBeforeCall or
	// KnowledgeTool.
	Knowledge KnowledgeMode
	// KnowledgeBases are the base ids: required with KnowledgeBeforeCall; with KnowledgeTool
	// they are searched when the model names none (none here either: every base the key may
	// read, as the MCP server does).
	KnowledgeBases []string
	// View, Task and MaxTokens are passed to the context call (MaxTokens: its one budget,
	// 50..10000, 0: the service's 2000).
	View      string
	Task      *sdk.ContextTask
	MaxTokens int
	// Evidence, when set, is the conversation or task the notes remembered come from.
	Evidence *sdk.Evidence
}

// agentMemory reports the AgentMemory option with its default.
func (o Options) agentMemory() bool { return o.AgentMemory == nil || *o.AgentMemory }

// ErrOptions is the error of New for options it cannot honour (an unknown Knowledge mode,
// KnowledgeBeforeCall without KnowledgeBases).
var ErrOptions = errors.New("tools: invalid options")

// Kit is the tool kit of one client and its options: the tools offered to the model, their
// dispatcher and the prompt. It is safe for concurrent use.
type Kit struct {
	client *sdk.Client
	opt    Options
	names  []string
}

// New returns the kit for c and opt. It asks the service's MCP server which tools the key may
// use (tools/list: search_agent_memory with agent_memory or context, remember with
// agent_memory:write, search_knowledge with knowledge:read and knowledge on; none while agent
// memory is off) and offers those the options ask for, in the order search_agent_memory,
// remember, search_knowledge. No request is sent when the options ask for no tool. Errors:
// ErrOptions (wrapped), or the client's (*sdk.Error, unreachable).
func New(ctx context.Context, c *sdk.Client, opt Options) (*Kit, error) {
	switch opt.Knowledge {
	case "", KnowledgeOff, KnowledgeBeforeCall, KnowledgeTool:
	default:
		return nil, fmt.Errorf("%w: unknown Knowledge mode %q", ErrOptions, opt.Knowledge)
	}
	if opt.Knowledge == KnowledgeBeforeCall && len(opt.KnowledgeBases) == 0 {
		return nil, fmt.Errorf("%w: Knowledge before_call needs KnowledgeBases", ErrOptions)
	}
	k := &Kit{client: c, opt: opt}
	wanted := map[string]bool{SearchAgentMemory: opt.agentMemory(), Remember: opt.WriteAgentMemory, SearchKnowledge: opt.Knowledge == KnowledgeTool}
	if !wanted[SearchAgentMemory] && !wanted[Remember] && !wanted[SearchKnowledge] {
		return k, nil
	}
	listed, err := c.MCPTools(ctx)
	if err != nil {
		return nil, err
	}
	for _, name := range order {
		if wanted[name] && slices.ContainsFunc(listed, func(t sdk.MCPTool) bool { return t.Name == name }) {
			k.names = append(k.names, name)
		}
	}
	return k, nil
}

// Names returns the names of the tools offered, in order.
func (k *Kit) Names() []string { return slices.Clone(k.names) }

// Offers reports whether the kit offers the tool name.
func (k *Kit) Offers(name string) bool { return slices.Contains(k.names, name) }

// Definitions returns the offered tools' definitions, in order.
func (k *Kit) Definitions() []Definition {
	out := make([]Definition, 0, len(k.names))
	for _, name := range k.names {
		out = append(out, Lookup(name))
	}
	return out
}

// Client returns the kit's client.
func (k *Kit) Client() *sdk.Client { return k.client }
