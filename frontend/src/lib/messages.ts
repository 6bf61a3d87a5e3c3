// Reading LangChain message objects (from @langchain/core) the way the page needs them.
import type { BaseMessage } from "@langchain/core/messages";

export type MessageKind = "human" | "ai" | "tool" | "system" | "other";

export interface CallOf {
  id: string;
  name: string;
  args: unknown;
}

type Block = Record<string, unknown> & { type?: unknown };

export function kindOf(message: BaseMessage): MessageKind {
  const kind = message.type as string;
  if (kind === "human" || kind === "ai" || kind === "tool" || kind === "system") return kind;
  return "other";
}

function rawBlocks(message: BaseMessage): Block[] {
  const content = message.content as unknown;
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  return Array.isArray(content) ? (content.filter((b) => b && typeof b === "object") as Block[]) : [];
}

function standardBlocks(message: BaseMessage): Block[] {
  try {
    return (message.contentBlocks as unknown as Block[]) ?? rawBlocks(message);
  } catch {
    return rawBlocks(message);
  }
}

export function textOf(message: BaseMessage): string {
  const content = message.content as unknown;
  if (typeof content === "string") return content;
  return rawBlocks(message)
    .filter((b) => b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join("");
}

function summaryText(summary: unknown): string {
  if (!Array.isArray(summary)) return "";
  return summary
    .map((part) => (part && typeof part === "object" && typeof part.text === "string" ? part.text : ""))
    .filter(Boolean)
    .join("\n\n");
}

/**
 * The reasoning summary of an AI message: standard `reasoning` blocks (what the streaming client assembles), else a
 * provider's raw form (OpenAI's Responses API keeps `summary: [{text}]` in the content or in additional_kwargs).
 */
export function reasoningOf(message: BaseMessage): string {
  const standard = standardBlocks(message)
    .filter((b) => b.type === "reasoning" && typeof b.reasoning === "string")
    .map((b) => b.reasoning as string)
    .join("");
  if (standard) return standard;
  const raw = rawBlocks(message)
    .filter((b) => b.type === "reasoning")
    .map((b) => (typeof b.reasoning === "string" ? b.reasoning : summaryText(b.summary)))
    .join("\n\n");
  if (raw) return raw;
  const extra = (message.additional_kwargs as Record<string, unknown> | undefined)?.reasoning as
    | { summary?: unknown }
    | undefined;
  return summaryText(extra?.summary);
}

export function toolCallsOf(message: BaseMessage): CallOf[] {
  const calls = (message as unknown as { tool_calls?: { id?: string; name?: string; args?: unknown }[] }).tool_calls;
  if (!Array.isArray(calls)) return [];
  return calls
    .filter((call) => typeof call.id === "string" && call.id)
    .map((call) => ({ id: call.id as string, name: call.name ?? "tool", args: call.args ?? {} }));
}

export interface ToolResult {
  content: string;
  isError: boolean;
}

/** Tool results in a transcript, by the id of the call they answer. */
export function toolResultsById(messages: readonly BaseMessage[]): Map<string, ToolResult> {
  const results = new Map<string, ToolResult>();
  for (const message of messages) {
    if (kindOf(message) !== "tool") continue;
    const tool = message as unknown as { tool_call_id?: string; status?: string };
    if (!tool.tool_call_id) continue;
    results.set(tool.tool_call_id, { content: textOf(message), isError: tool.status === "error" });
  }
  return results;
}

export function messageKey(message: BaseMessage, index: number): string {
  return message.id ? `${message.id}` : `index-${index}`;
}
