// Drives a live chat server with LangChain's official JS client (@langchain/langgraph-sdk 1.9.24), the way the
// deep-agent chat examples do (agent-streaming-protocol.md §10), and prints one JSON report on stdout.
//
//   CHAT_API_URL=http://127.0.0.1:8000/api [CHAT_API_KEY=...] [CHAT_DEFAULT_PATHS=1] node chat_client.mjs
//
// tests/chat/test_js_client.py runs it and asserts on the report.
import { Client, HttpAgentServerAdapter } from "@langchain/langgraph-sdk";
import { StreamController, messagesProjection, toolCallsProjection } from "@langchain/langgraph-sdk/stream";
import { HumanMessage } from "@langchain/core/messages";
import { randomUUID } from "node:crypto";
import { reportWhenDone, waitFor as waitUntil } from "./support_wait.mjs";

const apiUrl = process.env.CHAT_API_URL;
const apiKey = process.env.CHAT_API_KEY || undefined;
const prompt = process.env.CHAT_PROMPT || "Research LangGraph streaming, and separately calculate 42 * 17.";
const followUp = process.env.CHAT_FOLLOW_UP || "Now calculate 7 * 6.";
const stopPrompt = process.env.CHAT_STOP_PROMPT || "Research deep agents, and separately calculate 6 * 9.";
const headers = apiKey ? { "X-Api-Key": apiKey } : {};
const client = new Client({ apiUrl, apiKey, defaultHeaders: headers });
const report = { steps: [] };

const waitFor = (what, predicate) => waitUntil(what, predicate, { timeoutMs: 20000, intervalMs: 25 });

function textOf(message) {
  if (typeof message.content === "string") return message.content;
  return (message.content || []).filter((b) => b && b.type === "text").map((b) => b.text).join("");
}

function describeMessage(message) {
  const type = typeof message.getType === "function" ? message.getType() : message.type;
  const calls = (message.tool_calls || []).map((c) => ({ name: c.name, args: c.args, id: c.id }));
  const reasoning = (message.contentBlocks || []).filter((b) => b.type === "reasoning").map((b) => b.reasoning);
  return { type, text: textOf(message), tool_calls: calls, reasoning, tool_call_id: message.tool_call_id };
}

// Bootstrap like the examples' ensureThreadExists: 404 on GET /state, then POST /state.
async function ensureThread(threadId) {
  try {
    await client.threads.getState(threadId);
    return "existing";
  } catch (error) {
    if (error?.status !== 404) throw error;
    await client.threads.updateState(threadId, { values: { messages: [] } });
    return "created";
  }
}

async function openController(threadId, onCreated = undefined) {
  const transport = new HttpAgentServerAdapter({
    apiUrl,
    threadId,
    defaultHeaders: headers,
    // The examples' paths, or (CHAT_DEFAULT_PATHS=1) the client's own defaults: /threads/:id/stream/events.
    ...(process.env.CHAT_DEFAULT_PATHS === "1" ? {} :
      { paths: { commands: `/threads/${threadId}/commands`, stream: `/threads/${threadId}/stream` } }),
  });
  const controller = new StreamController({ assistantId: "_", client, threadId, transport, onCreated });
  controller.activate();
  await controller.hydrationPromise;
  return controller;
}

async function subagentViews(controller, expected, wanted = () => true) {
  const subagents = await waitFor(`${expected} subagents`, () => {
    const found = [...controller.subagentStore.getSnapshot()].filter(([, s]) => wanted(s));
    return found.length >= expected ? found : null;
  });
  const views = [];
  for (const [toolCallId, snapshot] of subagents) {
    await controller.resolveSubagentNamespace(toolCallId);
    const current = controller.subagentStore.getSnapshot().get(toolCallId) || snapshot;
    const messages = controller.registry.acquire(messagesProjection(current.namespace));
    const toolCalls = controller.registry.acquire(toolCallsProjection(current.namespace));
    try {
      // The two projections replay the subagent's events over their own subscriptions: wait for both.
      await waitFor(`messages and tool calls of ${current.name}`, () => {
        const list = messages.store.getSnapshot();
        const calls = toolCalls.store.getSnapshot();
        return list.length >= 4 && list.some((m) => textOf(m).length > 0 && !(m.tool_calls || []).length)
          && calls.length > 0 && calls.every((c) => c.status !== "running");
      });
      views.push({
        tool_call_id: toolCallId,
        name: current.name,
        status: current.status,
        namespace: current.namespace,
        task_input: current.taskInput,
        messages: messages.store.getSnapshot().map(describeMessage),
        tool_calls: toolCalls.store.getSnapshot().map((c) => ({ name: c.name, status: c.status })),
      });
    } finally {
      messages.release();
      toolCalls.release();
    }
  }
  return views;
}

function rootSummary(controller) {
  const root = controller.rootStore.getSnapshot();
  return {
    messages: root.messages.map(describeMessage),
    tool_calls: root.toolCalls.map((c) => ({ name: c.name, status: c.status, id: c.id })),
    is_loading: root.isLoading,
    error: root.error ? String(root.error?.message ?? root.error) : null,
  };
}

async function stopMidRun(controller, threadId, runIdOf) {
  // Once a subagent of the new run is at work the client cancels (POST …/runs/:id/cancel) and settles.
  const earlier = new Set(controller.subagentStore.getSnapshot().keys());
  let settled = false;
  const pending = controller.submit({ messages: [new HumanMessage(stopPrompt)] }).catch((e) => e)
    .finally(() => { settled = true; });
  await waitFor("a subagent at work", () => [...controller.subagentStore.getSnapshot()]
    .some(([id, s]) => !earlier.has(id) && s.status === "running"));
  // Rarely (about 1 run in 30 on a busy machine) the client settles its submit a few ms after sending it: it took an
  // earlier run's buffered terminal event for this run's end and forgot the run's id, so its stop() sends no cancel
  // (the server's log shows none). The script then sends the cancel stop() would have sent, through the same client.
  const clientForgotTheRun = settled;
  const stoppedAt = Date.now();
  await controller.stop();
  if (clientForgotTheRun) await client.runs.cancel(threadId, runIdOf(), false, "interrupt");
  await pending;
  return { run_id: runIdOf(), stop_ms: Date.now() - stoppedAt, client_forgot_the_run: clientForgotTheRun,
           ...rootSummary(controller) };
}

async function reload(threadId, onCreated, expectedSubagents) {
  // A page reload: a new controller hydrates from /state and rediscovers finished subagents from /history.
  const controller = await openController(threadId, onCreated);
  await waitFor("hydrated messages", () => controller.rootStore.getSnapshot().messages.length > 0);
  const summary = rootSummary(controller);
  summary.subagents = await subagentViews(controller, expectedSubagents, (s) => s.status === "complete");
  return { controller, summary };
}

async function main() {
  const threadId = randomUUID();
  let runId = null;
  const onCreated = (info) => { runId = info.runId; };
  report.thread_id = threadId;
  report.bootstrap = await ensureThread(threadId);

  // Turn 1: the example prompt, both subagents with their own messages and tool calls.
  let controller = await openController(threadId, onCreated);
  await controller.submit({ messages: [new HumanMessage(prompt)] });
  report.turn1 = rootSummary(controller);
  report.turn1.subagents = await subagentViews(controller, 2);

  if (process.env.CHAT_JS_SCENARIO === "reload-first") {
    // Reload right away, then keep talking on the reloaded page (needs CHAT_REPLAY_SCOPE=run: with the
    // examples' full replay a new page's submit takes an older run's terminal event for its own).
    await controller.dispose();
    const reloaded = await reload(threadId, onCreated, 2);
    report.reload = reloaded.summary;
    await reloaded.controller.submit({ messages: [new HumanMessage(followUp)] });
    report.turn2 = rootSummary(reloaded.controller);
    report.stop = await stopMidRun(reloaded.controller, threadId, () => runId);
    await reloaded.controller.dispose();
    return;
  }

  // Turn 2 on the same page.
  await controller.submit({ messages: [new HumanMessage(followUp)] });
  report.turn2 = rootSummary(controller);
  report.stop = await stopMidRun(controller, threadId, () => runId);
  await controller.dispose();
  const reloaded = await reload(threadId, onCreated, 3);
  report.reload = reloaded.summary;
  await reloaded.controller.dispose();
}

reportWhenDone(main, report);
