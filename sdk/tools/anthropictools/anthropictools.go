// Package anthropictools gives the SDK's tool kit (package tools) the shapes of the official
// Anthropic Go SDK, github.com/anthropics/anthropic-sdk-go/v2 (Messages): the offered tools as
// tool params, a model's tool_use blocks answered by tool_result blocks, and Prompt, the
// system prompt and the tools of one model call.
//
//	kit, _ := tools.New(ctx, am, tools.Options{WriteAgentMemory: true})
//	p, _ := anthropictools.Prompt(ctx, kit, tools.Turn{Instructions: "You are ...", UserMessage: msg})
//	params := anthropic.MessageNewParams{Model: model, MaxTokens: 1024, System: p.System, Tools: p.Tools,
//		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(msg))}}
//	done, _ := ac.Messages.New(ctx, params)
//	answer, ok, _ := anthropictools.HandleAll(ctx, kit, *done) // the user message of tool results
package anthropictools

import (
	"context"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/tools"
)

// Tool returns d as a Messages tool: {"name", "description", "input_schema"}, input_schema
// being d's JSON Schema member for member (properties, required, and the others, such as
// additionalProperties, as extra fields).
func Tool(d tools.Definition) anthropic.ToolUnionParam {
	schema := d.Schema()
	in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range schema {
		if k != "properties" && k != "required" && k != "type" {
			in.ExtraFields[k] = v
		}
	}
	return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: d.Name, Description: anthropic.String(d.Description), InputSchema: in}}
}

// Tools returns the tools kit offers, in its order, as Messages tools.
func Tools(kit *tools.Kit) []anthropic.ToolUnionParam {
	defs := kit.Definitions()
	out := make([]anthropic.ToolUnionParam, 0, len(defs))
	for _, d := range defs {
		out = append(out, Tool(d))
	}
	return out
}

// Handle runs one tool_use block through kit.Dispatch and returns the tool_result block
// answering it ({"type": "tool_result", "tool_use_id", "content": [{"type": "text", "text":
// the result's JSON}], "is_error"}). A refusal (a remember with personal data, a tool not
// offered) is the block's content with is_error true, for the model to read; err is
// kit.Dispatch's (the service unreachable).
func Handle(ctx context.Context, kit *tools.Kit, use anthropic.ToolUseBlock) (anthropic.ToolResultBlockParam, error) {
	result, err := kit.Dispatch(ctx, use.Name, string(use.Input))
	if err != nil {
		return anthropic.ToolResultBlockParam{}, err
	}
	return anthropic.ToolResultBlockParam{
		ToolUseID: use.ID,
		Content:   []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: result}}},
		IsError:   anthropic.Bool(tools.IsError(result)),
	}, nil
}

// HandleAll answers every tool_use block of msg (the model's answer), in order, as one user
// message of tool_result blocks to append after msg.ToParam() before the next model call. ok
// is false when msg has no tool_use block. It stops at the first error (see Handle).
func HandleAll(ctx context.Context, kit *tools.Kit, msg anthropic.Message) (answer anthropic.MessageParam, ok bool, err error) {
	var blocks []anthropic.ContentBlockParamUnion
	for _, block := range msg.Content {
		if block.Type != "tool_use" {
			continue
		}
		res, err := Handle(ctx, kit, block.AsToolUse())
		if err != nil {
			return anthropic.MessageParam{}, false, err
		}
		blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolResult: &res})
	}
	if len(blocks) == 0 {
		return anthropic.MessageParam{}, false, nil
	}
	return anthropic.NewUserMessage(blocks...), true, nil
}

// Prepared is one model call's memory in Anthropic's shapes: System, the system prompt as
// MessageNewParams.System takes it (one text block; none when the prompt is empty), Text
// the same as a string, Tools the kit's tools, and Context the context call's answer (nil
// when the options needed none).
type Prepared struct {
	System  []anthropic.TextBlockParam
	Text    string
	Tools   []anthropic.ToolUnionParam
	Context *sdk.Context
}

// Prompt is kit.Prompt (the system prompt in the spec's order from one context call) with the
// system prompt and the tools in Anthropic's shapes. Errors are kit.Prompt's.
func Prompt(ctx context.Context, kit *tools.Kit, turn tools.Turn) (Prepared, error) {
	p, err := kit.Prompt(ctx, turn)
	if err != nil {
		return Prepared{}, err
	}
	out := Prepared{Text: p.System, Tools: Tools(kit), Context: p.Context}
	if p.System != "" {
		out.System = []anthropic.TextBlockParam{{Text: p.System}}
	}
	return out, nil
}
