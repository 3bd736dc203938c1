package tools

import (
	"context"
	"unicode/utf8"

	"github.com/agentmemory/agentmemory/sdk"
)

// Turn is what Prompt composes one model call's system prompt from.
type Turn struct {
	// Instructions are the agent's own instructions: first in the prompt.
	Instructions string
	// UserMessage is the latest user message: the knowledge query with KnowledgeBeforeCall
	// (its first 1000 characters; empty: no knowledge for this call).
	UserMessage string
	// CustomerContext is the customer's context you hold (their data, the conversation's
	// state): after the block, before the context call's context (the task section and the
	// knowledge evidence, which change with each question and so come last, keeping the
	// provider's prompt cache on everything before them).
	CustomerContext string
}

// Prepared is Prompt's answer: System, the system prompt in the spec's order (instructions,
// the notes block, the customer's context, then the task section and the knowledge evidence:
// the same order in the Python and TypeScript SDKs); Context, the context
// call's answer it was built from (nil when the options needed none).
type Prepared struct {
	System  string
	Context *sdk.Context
}

// maxQueryRunes is the knowledge query's limit (POST /v1/knowledge/retrieve, KN-4).
const maxQueryRunes = 1000

// Prompt composes the system prompt of one model call (AM-4, issue 28). With AgentMemory (the
// default) it runs one context call (POST /v1/context: view, task, max_tokens, and with
// KnowledgeBeforeCall knowledge {kbs, query: the user message}) and places its system block
// after the instructions, then the customer's context, then the call's context; the client's cache (CTX-4) makes a
// repeated call free inside the freshness period. With AgentMemory off, KnowledgeBeforeCall
// retrieves through POST /v1/knowledge/retrieve (the key needs knowledge:read; MaxTokens is
// passed when within retrieval's 100..8000), so no note is fetched or recorded as delivered.
// Errors are the client's (*sdk.Error, unreachable): unlike a tool call, a failed prompt stops
// the turn.
func (k *Kit) Prompt(ctx context.Context, t Turn) (Prepared, error) {
	query := truncateRunes(t.UserMessage, maxQueryRunes)
	withKnowledge := k.opt.Knowledge == KnowledgeBeforeCall && query != ""
	if !k.opt.agentMemory() {
		evidence := ""
		if withKnowledge {
			req := sdk.RetrieveRequest{Query: query, KBs: k.opt.KnowledgeBases}
			if k.opt.MaxTokens >= 100 && k.opt.MaxTokens <= 8000 {
				req.MaxTokens = k.opt.MaxTokens
			}
			res, err := k.client.Retrieve(ctx, req)
			if err != nil {
				return Prepared{}, err
			}
			evidence = res.Context
		}
		return Prepared{System: sdk.SystemPrompt(t.Instructions, "", join(t.CustomerContext, evidence))}, nil
	}
	req := sdk.ContextRequest{View: k.opt.View, Task: k.opt.Task, MaxTokens: k.opt.MaxTokens}
	if withKnowledge {
		req.Knowledge = &sdk.ContextKnowledge{KBs: k.opt.KnowledgeBases, Query: query}
	}
	a, err := k.client.Context(ctx, req)
	if err != nil {
		return Prepared{}, err
	}
	return Prepared{System: sdk.SystemPrompt(t.Instructions, a.SystemBlock, join(t.CustomerContext, a.Context)), Context: &a}, nil
}

// join is SystemPrompt's joining of two parts (empty ones skipped).
func join(a, b string) string { return sdk.SystemPrompt(a, b, "") }

// truncateRunes returns s's first n characters.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}
