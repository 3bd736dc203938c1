// Command anthropic is an agent on the Anthropic Messages API
// (github.com/anthropics/anthropic-sdk-go/v2) with memory from agentmemory: the notes block in
// its system prompt, and the remember, search_agent_memory and search_knowledge tools.
//
// Run it against `make run` (the service on 127.0.0.1:8080) with an agent key that has scopes
// agent_memory, agent_memory:write and knowledge:read (README "Agent keys"):
//
//	cd sdk && AGENTMEMORY_KEY=am_... ANTHROPIC_API_KEY=sk-ant-... go run ./examples/anthropic "Can I get a refund to my card?"
//
// AGENTMEMORY_URL overrides the service's address, ANTHROPIC_BASE_URL the model's,
// ANTHROPIC_MODEL the model (default claude-sonnet-4-5).
package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/tools"
	"github.com/agentmemory/agentmemory/sdk/tools/anthropictools"
)

func main() {
	am, err := sdk.New(sdk.Options{BaseURL: cmp.Or(os.Getenv("AGENTMEMORY_URL"), "http://127.0.0.1:8080"), Key: os.Getenv("AGENTMEMORY_KEY")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	question := cmp.Or(strings.Join(os.Args[1:], " "), "Can I get a refund to my card?")
	model := anthropic.Model(cmp.Or(os.Getenv("ANTHROPIC_MODEL"), "claude-sonnet-4-5"))
	answer, err := run(context.Background(), am, anthropic.NewClient(), model, question)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(answer)
}

// run answers question: memory in the system prompt and the tools (the five lines after the
// kit), then the model is called until it stops asking for tools (at most 5 rounds).
func run(ctx context.Context, am *sdk.Client, ac anthropic.Client, model anthropic.Model, question string) (string, error) {
	kit, err := tools.New(ctx, am, tools.Options{WriteAgentMemory: true, Knowledge: tools.KnowledgeTool})
	if err != nil {
		return "", err
	}
	p, err := anthropictools.Prompt(ctx, kit, tools.Turn{Instructions: "You are the store's support assistant.", UserMessage: question})
	if err != nil {
		return "", err
	}
	params := anthropic.MessageNewParams{Model: model, MaxTokens: 1024, System: p.System, Tools: p.Tools,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(question))}}
	for range 5 {
		msg, err := ac.Messages.New(ctx, params)
		if err != nil {
			return "", err
		}
		results, ok, err := anthropictools.HandleAll(ctx, kit, *msg) // a refused remember is a result the model reads
		if err != nil {
			return "", err
		}
		if !ok {
			var text strings.Builder
			for _, b := range msg.Content {
				if b.Type == "text" {
					text.WriteString(b.Text)
				}
			}
			return text.String(), nil
		}
		params.Messages = append(params.Messages, msg.ToParam(), results)
	}
	return "", fmt.Errorf("the model was still asking for tools after 5 rounds")
}
