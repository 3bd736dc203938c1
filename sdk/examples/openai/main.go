// Command openai is an agent on the OpenAI Chat Completions API (github.com/openai/openai-go/v3)
// with memory from agentmemory: the notes block in its system prompt, and the remember,
// search_agent_memory and search_knowledge tools.
//
// Run it against `make run` (the service on 127.0.0.1:8080) with an agent key that has scopes
// agent_memory, agent_memory:write and knowledge:read (README "Agent keys"):
//
//	cd sdk && AGENTMEMORY_KEY=am_... OPENAI_API_KEY=sk-... go run ./examples/openai "Can I get a refund to my card?"
//
// AGENTMEMORY_URL overrides the service's address, OPENAI_BASE_URL the model's, OPENAI_MODEL
// the model (default gpt-4o-mini).
package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/tools"
	"github.com/agentmemory/agentmemory/sdk/tools/openaitools"
)

func main() {
	am, err := sdk.New(sdk.Options{BaseURL: cmp.Or(os.Getenv("AGENTMEMORY_URL"), "http://127.0.0.1:8080"), Key: os.Getenv("AGENTMEMORY_KEY")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	question := cmp.Or(strings.Join(os.Args[1:], " "), "Can I get a refund to my card?")
	answer, err := run(context.Background(), am, openai.NewClient(), cmp.Or(os.Getenv("OPENAI_MODEL"), "gpt-4o-mini"), question)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(answer)
}

// run answers question: memory in the system prompt and the tools (the five lines after the
// kit), then the model is called until it stops calling tools (at most 5 rounds).
func run(ctx context.Context, am *sdk.Client, oa openai.Client, model, question string) (string, error) {
	kit, err := tools.New(ctx, am, tools.Options{WriteAgentMemory: true, Knowledge: tools.KnowledgeTool})
	if err != nil {
		return "", err
	}
	p, err := openaitools.Prompt(ctx, kit, tools.Turn{Instructions: "You are the store's support assistant.", UserMessage: question})
	if err != nil {
		return "", err
	}
	params := openai.ChatCompletionNewParams{Model: model, Tools: p.Tools,
		Messages: []openai.ChatCompletionMessageParamUnion{p.System, openai.UserMessage(question)}}
	for range 5 {
		done, err := oa.Chat.Completions.New(ctx, params)
		if err != nil {
			return "", err
		}
		if len(done.Choices) == 0 {
			return "", fmt.Errorf("the model answered no choice")
		}
		msg := done.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		results, err := openaitools.HandleAll(ctx, kit, msg) // a refused remember is a result the model reads
		if err != nil {
			return "", err
		}
		params.Messages = append(append(params.Messages, msg.ToParam()), results...)
	}
	return "", fmt.Errorf("the model was still calling tools after 5 rounds")
}
