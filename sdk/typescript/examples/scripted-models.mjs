// Scripted models for the framework examples, so that they run against `make run` on a machine
// with no model provider (and in `make test-typescript`): each model calls `remember` once with
// a lesson, then answers "done". Replace them with your provider's model to use a real one.
import { MockLanguageModelV3 } from "ai/test";
import { Usage } from "@openai/agents";
import { AIMessage } from "@langchain/core/messages";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";

/** The note the scripted models write. */
export const LESSON = {
  kind: "tool_note",
  title: "Refund status API",
  body: "The refund status API answers pending for up to an hour after approval; wait before retrying.",
  tags: ["refund"],
};

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** A Vercel AI SDK mock model (ai/test) that calls remember, then says done. */
export function scriptedAIModel() {
  return new MockLanguageModelV3({
    doGenerate: [
      { content: [{ type: "tool-call", toolCallId: "t1", toolName: "remember", input: JSON.stringify(LESSON) }], finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage, warnings: [] },
      { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] },
    ],
  });
}

/** An OpenAI Agents SDK Model that calls remember, then says done; `requests` holds what it received. */
export function scriptedAgentsModel() {
  const script = [
    [{ type: "function_call", callId: "c1", name: "remember", arguments: JSON.stringify(LESSON), status: "completed" }],
    [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }],
  ];
  const requests = [];
  return {
    requests,
    async getResponse(request) {
      requests.push(request);
      return { usage: new Usage(), output: script.shift() ?? script.at(-1) };
    },
    async *getStreamedResponse() {
      throw new Error("the scripted model does not stream");
    },
  };
}

/** A LangChain chat model that calls remember, then says done; `received` holds the messages of each call. */
export class ScriptedChatModel extends BaseChatModel {
  constructor() {
    super({});
  }
  received = [];
  script = [new AIMessage({ content: "", tool_calls: [{ id: "l1", name: "remember", args: LESSON, type: "tool_call" }] }), new AIMessage({ content: "done" })];
  _llmType() {
    return "scripted";
  }
  bindTools() {
    return this;
  }
  async _generate(messages) {
    this.received.push(messages);
    const message = this.script.shift() ?? new AIMessage({ content: "done" });
    return { generations: [{ text: String(message.content), message }] };
  }
}
