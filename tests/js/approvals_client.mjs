// Answers the deep agent's approvals with LangChain's official JS client (@langchain/langgraph-sdk 1.9.24) against
// a live chat server whose CHAT_APPROVE_TOOLS guards the subagents' tools, and prints one JSON report on stdout.
//
//   CHAT_API_URL=http://127.0.0.1:8000/api node approvals_client.mjs
//
// tests/chat/test_js_approvals.py runs it and asserts on the report.
import { Client, HttpAgentServerAdapter } from "@langchain/langgraph-sdk";
import { StreamController } from "@langchain/langgraph-sdk/stream";
import { HumanMessage } from "@langchain/core/messages";
import { randomUUID } from "node:crypto";
import { reportWhenDone, waitFor as waitUntil } from "./support_wait.mjs";

const apiUrl = process.env.CHAT_API_URL;
const client = new Client({ apiUrl });
const report = {};
const MATH = "Calculate 42 * 17";
const BOTH = "Research the abacus, and separately calculate 42 * 17.";

const waitFor = (what, predicate) => waitUntil(what, predicate, { timeoutMs: 20000, intervalMs: 25 });

function textOf(message) {
  if (typeof message.content === "string") return message.content;
  return (message.content || []).filter((b) => b && b.type === "text").map((b) => b.text).join("");
}

async function openController(threadId) {
  const transport = new HttpAgentServerAdapter({
    apiUrl, threadId,
    paths: { commands: `/threads/${threadId}/commands`, stream: `/threads/${threadId}/stream` },
  });
  const controller = new StreamController({ assistantId: "_", client, threadId, transport });
  controller.activate();
  await controller.hydrationPromise;
  return controller;
}

// What the page would show: each pending approval with the tool it asks about and where.
async function pending(controller, count) {
  const found = await waitFor(`${count} pending approval(s)`, () => {
    const list = controller.getThread()?.interrupts ?? [];
    return list.length >= count ? list : null;
  });
  return found.map((i) => ({ id: i.interruptId, namespace: i.namespace,
    tool: i.payload?.action_requests?.[0]?.name, args: i.payload?.action_requests?.[0]?.args }));
}

async function finalAnswer(controller, expected) {
  return await waitFor(`an answer with ${expected}`, () => {
    const root = controller.rootStore.getSnapshot();
    const last = root.messages[root.messages.length - 1];
    const text = last ? textOf(last) : "";
    return !root.isLoading && text.includes(expected) ? { text, error: root.error ? String(root.error) : null } : null;
  });
}

async function startWaiting(text, count, options = undefined) {
  const threadId = randomUUID();
  await client.threads.updateState(threadId, { values: { messages: [] } });
  const controller = await openController(threadId);
  await controller.submit({ messages: [new HumanMessage(text)] }, options);
  return { threadId, controller, asked: await pending(controller, count) };
}

async function decide(name, decision, expected) {
  const { controller, asked } = await startWaiting(MATH, 1);
  const [only] = asked;
  await controller.respond({ decisions: [decision] }, { interruptId: only.id, namespace: only.namespace });
  report[name] = { asked, ...(await finalAnswer(controller, expected)) };
  return { controller, asked };
}

async function main() {
  const approved = await decide("approve", { type: "approve" }, "42 * 17 = 714");
  await decide("edit", { type: "edit", editedAction: { name: "calculator", args: { expression: "6 * 7" } } },
    "6 * 7 = 42");
  await decide("reject", { type: "reject", message: "not now" }, "you rejected the call (not now)");

  // An answer to an interrupt that was already answered.
  const thread = approved.controller.getThread();
  try {
    await thread.respondInput({ namespace: approved.asked[0].namespace, interrupt_id: approved.asked[0].id,
      response: { decisions: [{ type: "approve" }] } });
    report.stale = { error: null };
  } catch (error) {
    report.stale = { error: error?.code ?? error?.error ?? String(error), message: String(error?.message ?? "") };
  }
  await approved.controller.dispose();

  // The coordinator's own delegation, guarded by this run's config (only `task`), asked at the root namespace.
  const coordinator = await startWaiting(MATH, 1, { config: { configurable: { approve_tools: ["task"] } } });
  await coordinator.controller.respond({ decisions: [{ type: "approve" }] },
    { interruptId: coordinator.asked[0].id, namespace: coordinator.asked[0].namespace });
  report.coordinator = { asked: coordinator.asked, ...(await finalAnswer(coordinator.controller, "42 * 17 = 714")) };
  await coordinator.controller.dispose();

  // Two subagents waiting at once, answered in one batch.
  const both = await startWaiting(BOTH, 2);
  await both.controller.respondAll(Object.fromEntries(both.asked.map((a) => [a.id, { decisions: [{ type: "approve" }] }])));
  report.batch = { asked: both.asked, ...(await finalAnswer(both.controller, "42 * 17 = 714")) };
  await both.controller.dispose();

  // A reload while waiting: a new page sees the same approval and answers it.
  const waiting = await startWaiting(MATH, 1);
  await waiting.controller.dispose();
  const reloaded = await openController(waiting.threadId);
  const again = await pending(reloaded, 1);
  await reloaded.respond({ decisions: [{ type: "approve" }] }, { interruptId: again[0].id, namespace: again[0].namespace });
  report.reload = { before: waiting.asked, after: again, ...(await finalAnswer(reloaded, "42 * 17 = 714")) };
  await reloaded.dispose();
}

reportWhenDone(main, report);
