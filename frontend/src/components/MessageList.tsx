import type { BaseMessage } from "@langchain/core/messages";
import type { AssembledToolCall } from "@langchain/react";
import { Fragment, type ReactNode } from "react";

import {
  type CallOf,
  kindOf,
  messageKey,
  reasoningOf,
  textOf,
  type ToolResult,
  toolCallsOf,
  toolResultsById,
} from "../lib/messages";
import { Markdown } from "./Markdown";
import { AnswerActions, HumanMessage, type TranscriptActions } from "./MessageActions";
import { Reasoning } from "./Reasoning";
import type { Status } from "./Status";
import { ToolCallCard, type ToolCallView } from "./ToolCallCard";

interface Props {
  messages: readonly BaseMessage[];
  /** Live tool-call states of this namespace (from the streaming client). */
  toolCalls: readonly AssembledToolCall[];
  /** Whether this namespace is still producing output. */
  active: boolean;
  /** Renders a call itself (the coordinator's `task` calls become subagent cards); null = a tool call card. */
  renderCall?: (call: CallOf) => ReactNode | null;
  /** What follows a call's card (the approval cards of the coordinator's calls). */
  afterCall?: (call: CallOf) => ReactNode;
  /** Human messages to leave out (a subagent's task is already in its card's header). */
  skipHumanText?: string;
  /** Copy, edit, regenerate and branch switching (the root transcript only). */
  actions?: TranscriptActions;
}

/** For each message, the index of the last assistant message of its turn (a turn ends at the next user message). */
export function turnEnds(messages: readonly BaseMessage[]): number[] {
  const ends = new Array<number>(messages.length).fill(-1);
  let lastAi = -1;
  for (let index = messages.length - 1; index >= 0; index--) {
    const kind = kindOf(messages[index]);
    if (kind === "human") lastAi = -1;
    else if (kind === "ai" && lastAi === -1) lastAi = index;
    ends[index] = kind === "human" ? -1 : lastAi;
  }
  return ends;
}

function callView(call: CallOf, live: AssembledToolCall | undefined, result: ToolResult | undefined,
                  active: boolean): ToolCallView {
  if (live && live.status !== "running") {
    const failed = live.status === "error";
    return { id: call.id, name: live.name || call.name, args: live.args ?? call.args,
             status: failed ? "error" : "complete", result: failed ? undefined : live.output ?? result?.content,
             error: failed ? live.error ?? result?.content : undefined };
  }
  if (result) {
    return { id: call.id, name: call.name, args: call.args, status: result.isError ? "error" : "complete",
             result: result.isError ? undefined : result.content, error: result.isError ? result.content : undefined };
  }
  const status: Status = live ? "running" : active ? "pending" : "stopped";
  return { id: call.id, name: call.name, args: live?.args ?? call.args, status };
}

/** A transcript: human turns, assistant turns (thinking, markdown text, tool calls); tool results sit in their call. */
export function MessageList({ messages, toolCalls, active, renderCall, afterCall, skipHumanText, actions }: Props) {
  const results = toolResultsById(messages);
  const ends = turnEnds(messages);
  const live = new Map(toolCalls.map((call) => [call.callId ?? call.id, call]));
  const lastAi = messages.reduce((found, message, index) => (kindOf(message) === "ai" ? index : found), -1);
  return (
    <>
      {messages.map((message, index) => {
        const kind = kindOf(message);
        if (kind === "human") {
          const text = textOf(message);
          if (skipHumanText !== undefined && text.trim() === skipHumanText.trim()) return null;
          return <HumanMessage key={messageKey(message, index)} index={index} text={text} actions={actions} />;
        }
        if (kind !== "ai") return null;
        const reasoning = reasoningOf(message);
        const text = textOf(message);
        const calls = toolCallsOf(message);
        const thinking = active && index === lastAi && !text && calls.length === 0;
        if (!reasoning && !text && calls.length === 0 && !(active && index === lastAi)) return null;
        const endsTurn = actions !== undefined && ends[index] === index;
        return (
          <article key={messageKey(message, index)} className="msg msg-ai" aria-label="Assistant" data-index={index}>
            {reasoning ? <Reasoning text={reasoning} thinking={thinking} /> : null}
            {text ? <Markdown text={text} /> : null}
            {calls.map((call) => {
              const custom = renderCall?.(call);
              return (
                <Fragment key={call.id}>
                  {custom ? <div>{custom}</div>
                    : <ToolCallCard call={callView(call, live.get(call.id), results.get(call.id), active)} />}
                  {afterCall?.(call)}
                </Fragment>
              );
            })}
            {endsTurn && actions ? (
              <AnswerActions index={index} text={text} pending={active && index === lastAi} actions={actions} />
            ) : null}
          </article>
        );
      })}
    </>
  );
}
