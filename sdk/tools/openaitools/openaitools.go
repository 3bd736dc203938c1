// Package openaitools gives the SDK's tool kit (package tools) the shapes of the official
// OpenAI Go SDK, github.com/openai/openai-go/v3 (Chat Completions): the offered tools as
// function tools, a model's tool calls answered by tool messages, and Prompt, the system
// message and the tools of one model call.
//
//	kit, _ := tools.New(ctx, am, tools.Options{WriteAgentMemory: true})
//	p, _ := openaitools.Prompt(ctx, kit, tools.Turn{Instructions: "You are ...", UserMessage: msg})
//	params := openai.ChatCompletionNewParams{Model: model, Tools: p.Tools,
//		Messages: []openai.ChatCompletionMessageParamUnion{p.System, openai.UserMessage(msg)}}
//	done, _ := oa.Chat.Completions.New(ctx, params)
//	answers, _ := openaitools.HandleAll(ctx, kit, done.Choices[0].Message) // tool messages
package openaitools

import (
	"context"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/tools"
)

// Tool returns d as a Chat Completions function tool: {"type": "function", "function":
// {"name", "description", "parameters"}}, parameters being d's JSON Schema (not strict: the
// schemas allow optional members, which strict mode forbids).
func Tool(d tools.Definition) openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        d.Name,
		Description: openai.String(d.Description),
		Parameters:  shared.FunctionParameters(d.Schema()),
	})
}

// Tools returns the tools kit offers, in its order, as Chat Completions function tools.
func Tools(kit *tools.Kit) []openai.ChatCompletionToolUnionParam {
	defs := kit.Definitions()
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(defs))
	for _, d := range defs {
		out = append(out, Tool(d))
	}
	return out
}

// Handle runs one tool call of the model through kit.Dispatch and returns the tool message
// answering it ({"role": "tool", "tool_call_id", "content": the result's JSON}). A refusal
// (a remember with personal data, a tool not offered, a custom tool call) is the message's
// content, for the model to read; err is kit.Dispatch's (the service unreachable).
func Handle(ctx context.Context, kit *tools.Kit, call openai.ChatCompletionMessageToolCallUnion) (openai.ChatCompletionMessageParamUnion, error) {
	name, args := call.Function.Name, call.Function.Arguments
	if call.Type != "" && call.Type != "function" {
		name, args = "", ""
	}
	result, err := kit.Dispatch(ctx, name, args)
	if err != nil {
		return openai.ChatCompletionMessageParamUnion{}, err
	}
	return openai.ToolMessage(result, call.ID), nil
}

// HandleAll answers every tool call of msg (a completion's choice message), in order: the
// tool messages to append after msg.ToParam() before the next model call. It stops at the
// first error (see Handle).
func HandleAll(ctx context.Context, kit *tools.Kit, msg openai.ChatCompletionMessage) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msg.ToolCalls))
	for _, call := range msg.ToolCalls {
		m, err := Handle(ctx, kit, call)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Prepared is one model call's memory in OpenAI's shapes: System, the system message (Text
// as a string), Tools, the kit's tools, and Context, the context call's answer (nil when the
// options needed none).
type Prepared struct {
	System  openai.ChatCompletionMessageParamUnion
	Text    string
	Tools   []openai.ChatCompletionToolUnionParam
	Context *sdk.Context
}

// Prompt is kit.Prompt (the system prompt in the spec's order from one context call) with the
// system message and the tools in OpenAI's shapes. Errors are kit.Prompt's.
func Prompt(ctx context.Context, kit *tools.Kit, turn tools.Turn) (Prepared, error) {
	p, err := kit.Prompt(ctx, turn)
	if err != nil {
		return Prepared{}, err
	}
	return Prepared{System: openai.SystemMessage(p.System), Text: p.System, Tools: Tools(kit), Context: p.Context}, nil
}
