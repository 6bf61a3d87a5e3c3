// Drives our Agent Server API with LangChain's official JS client (@langchain/langgraph-sdk 1.9.24) in its default
// mode: `new Client({apiUrl, apiKey})`, no custom transport. Prints one JSON report on stdout (the last line);
// tests/agentserver/test_js_client.py and tests/deployments/test_live_js_clients.py run it; tests/agentserver/
// support_js.py asserts on the report. It also puts, reads, searches and deletes store items, and crons.
//
//   CHAT_API_URL=... CHAT_ASSISTANT=agent SLOW_API_URL=... SLOW_ASSISTANT=agent [AS_API_KEY=...] \
//     node agent_server_client.mjs
//
// CHAT_* serves the test project's `chat` graph (a streaming model that answers the words reversed), SLOW_* its
// `slow` graph (ticks with custom events). Both may be the same server (a deployment serves every graph).
import { Client } from "@langchain/langgraph-sdk";
import { waitFor as waitUntil } from "./support_wait.mjs";

const apiKey = process.env.AS_API_KEY || undefined;
const chat = { client: new Client({ apiUrl: process.env.CHAT_API_URL, apiKey }), assistant: process.env.CHAT_ASSISTANT };
const slow = { client: new Client({ apiUrl: process.env.SLOW_API_URL, apiKey }), assistant: process.env.SLOW_ASSISTANT };
const report = {};

const human = (content) => ({ messages: [{ type: "human", content }] });
const describe = (m) => ({ type: m.type, content: m.content, id: m.id });

const waitFor = (what, predicate) => waitUntil(what, predicate, { timeoutMs: 30000, intervalMs: 50 });

// A background run, then join: the final values.
async function createAndJoin() {
  const thread = await chat.client.threads.create({ metadata: { via: "js-sdk" } });
  const run = await chat.client.runs.create(thread.thread_id, chat.assistant, { input: human("hello brave new world") });
  const values = await chat.client.runs.join(thread.thread_id, run.run_id);
  const done = await chat.client.runs.get(thread.thread_id, run.run_id);
  report.join = {
    thread_id: thread.thread_id, thread_metadata: thread.metadata, run_id: run.run_id,
    created_status: run.status, final_status: done.status, messages: values.messages.map(describe),
  };
  return thread;
}

// A streamed run on the same thread with three stream modes: every part's event, and the message tokens.
async function streamModes(thread) {
  const parts = [];
  let created;
  for await (const part of chat.client.runs.stream(thread.thread_id, chat.assistant, {
    input: human("one two three four"),
    streamMode: ["values", "updates", "messages-tuple"],
    onRunCreated: (meta) => { created = meta; },
  })) {
    parts.push({ event: part.event, data: part.data });
  }
  const tokens = parts.filter((p) => p.event === "messages").map((p) => ({
    type: p.data[0].type, content: p.data[0].content, id: p.data[0].id, node: p.data[1]?.langgraph_node,
  }));
  report.stream = {
    created,
    events: parts.map((p) => p.event),
    metadata: parts[0].data,
    tokens,
    updates: parts.filter((p) => p.event === "updates").map((p) => p.data),
    last_values: parts.filter((p) => p.event === "values").at(-1)?.data,
  };
}

// A resumable slow run, joined twice: once from the start until two ticks arrived (then dropped), once after the
// last event id seen.
async function resumeAfterLastEventId() {
  const thread = await slow.client.threads.create();
  const run = await slow.client.runs.create(thread.thread_id, slow.assistant, {
    input: { steps: 5, delay: 0.4 }, streamResumable: true, streamMode: ["values", "custom"],
  });
  const first = [];
  const controller = new AbortController();
  for await (const part of slow.client.runs.joinStream(thread.thread_id, run.run_id, {
    lastEventId: "-1", signal: controller.signal,
  })) {
    first.push({ id: part.id, event: part.event, data: part.data });
    if (first.filter((p) => p.event === "custom").length === 2) break;
  }
  controller.abort();
  const lastEventId = first.at(-1).id;
  const rest = [];
  for await (const part of slow.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId })) {
    rest.push({ id: part.id, event: part.event, data: part.data });
  }
  const whole = [];
  for await (const part of slow.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" })) {
    whole.push({ id: part.id, event: part.event, data: part.data });
  }
  const done = await slow.client.runs.get(thread.thread_id, run.run_id);
  report.resume = { run_id: run.run_id, last_event_id: lastEventId, first, rest, whole, final_status: done.status };
}

// A long run cancelled while it runs (wait=true): the run ends interrupted and join returns.
async function cancelMidRun() {
  const thread = await slow.client.threads.create();
  const run = await slow.client.runs.create(thread.thread_id, slow.assistant, { input: { steps: 100, delay: 0.2 } });
  const running = await waitFor("the run to start", async () => {
    const found = await slow.client.runs.get(thread.thread_id, run.run_id);
    return found.status === "running" && found;
  });
  await slow.client.runs.cancel(thread.thread_id, run.run_id, true);
  await slow.client.runs.join(thread.thread_id, run.run_id);
  const done = await slow.client.runs.get(thread.thread_id, run.run_id);
  const state = await slow.client.threads.get(thread.thread_id);
  report.cancel = { run_id: run.run_id, seen_status: running.status, final_status: done.status,
                    thread_status: state.status };
}

// The store: put (twice: an update), get, search with a filter, list namespaces, delete.
async function storeRoundTrip() {
  const store = chat.client.store;
  const root = `js-${Date.now()}`;
  await store.putItem([root, "u1"], "prefs", { theme: "dark", size: 3 });
  await store.putItem([root, "u1"], "prefs", { theme: "light", size: 5 });
  await store.putItem([root, "u2"], "prefs", { theme: "dark", size: 1 });
  const item = await store.getItem([root, "u1"], "prefs");
  const found = await store.searchItems([root], { filter: { size: { $gte: 2 } } });
  const namespaces = await store.listNamespaces({ prefix: [root], maxDepth: 2 });
  await store.deleteItem([root, "u1"], "prefs");
  report.store = {
    root, item, found: found.items.map((i) => ({ namespace: i.namespace, key: i.key, value: i.value })),
    namespaces: namespaces.namespaces, deleted: await store.getItem([root, "u1"], "prefs"),
  };
}

// Crons: one stateless and one on a thread, searched, counted, updated (an invalid schedule refused) and deleted.
async function cronsRoundTrip() {
  const crons = chat.client.crons;
  const marker = `js-${Date.now()}`;
  const thread = await chat.client.threads.create();
  const stateless = await crons.create(chat.assistant, {
    schedule: "*/5 * * * *", input: human("tick"), metadata: { marker }, onRunCompleted: "keep" });
  const onThread = await crons.createForThread(thread.thread_id, chat.assistant, {
    schedule: "0 9 * * 1", metadata: { marker, kind: "thread" }, enabled: false, endTime: "2100-01-01T00:00:00Z" });
  const found = await crons.search({ metadata: { marker }, sortBy: "created_at", sortOrder: "asc" });
  const selected = await crons.search({ threadId: thread.thread_id, select: ["cron_id", "enabled"] });
  const counted = await crons.count({ metadata: { marker } });
  const updated = await crons.update(onThread.cron_id, { schedule: "30 6 * * *", enabled: true, metadata: { stage: 2 } });
  let refused = null;
  try {
    await crons.update(onThread.cron_id, { schedule: "not a schedule" });
  } catch (error) {
    refused = error?.status ?? String(error);
  }
  await crons.delete(stateless.cron_id);
  await crons.delete(onThread.cron_id);
  report.crons = {
    thread_id: thread.thread_id, stateless, onThread, found: found.map((c) => c.cron_id), selected, counted, updated,
    refused, left: await crons.count({ metadata: { marker } }),
  };
}

try {
  await storeRoundTrip();
  await cronsRoundTrip();
  const thread = await createAndJoin();
  await streamModes(thread);
  await resumeAfterLastEventId();
  await cancelMidRun();
} catch (error) {
  report.failure = `${error?.stack || error}`;
}
console.log(JSON.stringify(report));
