// A test-only page: React's `useStream` (@langchain/langgraph-sdk/react, its default Agent Server mode, no custom
// transport) on one graph of the test project. tests/agentserver/js_support.py serves it and drives it in
// Chromium. Query parameters: apiUrl, apiKey, assistant, mode (chat | slow | asker), thread (kept across reloads).
//
// Built by build_use_stream_page.mjs (esbuild) into dist/use_stream_page.js.
import React, { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

const params = new URLSearchParams(window.location.search);
const config = {
  apiUrl: params.get("apiUrl"),
  apiKey: params.get("apiKey") || undefined,
  assistant: params.get("assistant"),
  mode: params.get("mode") || "chat",
};
// Every distinct text the page has shown for the last AI message, in order: the test checks that partial text was
// on screen before the final one.
window.__shownAiTexts = [];
window.__errors = [];

function keepThreadInUrl(threadId) {
  const next = new URLSearchParams(window.location.search);
  next.set("thread", threadId);
  window.history.replaceState(null, "", `${window.location.pathname}?${next}`);
}

function textOf(message) {
  if (typeof message.content === "string") return message.content;
  return (message.content || []).filter((b) => b?.type === "text").map((b) => b.text).join("");
}

function Messages({ messages }) {
  const lastAi = [...messages].reverse().find((m) => m.type === "ai");
  const shown = lastAi ? textOf(lastAi) : null;
  useEffect(() => {
    if (shown != null && window.__shownAiTexts.at(-1) !== shown) window.__shownAiTexts.push(shown);
  }, [shown]);
  return (
    <ol className="messages">
      {messages.map((m, i) => (
        <li key={m.id ?? i} className={`message ${m.type}`} data-testid="message" data-type={m.type}>
          <span className="who">{m.type === "human" ? "You" : "Agent"}</span>
          <span className="text">{textOf(m)}</span>
        </li>
      ))}
    </ol>
  );
}

function Ticks({ ticks }) {
  return (
    <ol className="ticks" data-testid="ticks">
      {ticks.map((t) => <li key={t} data-testid="tick">tick {t}</li>)}
    </ol>
  );
}

function Interrupt({ interrupt, onResume }) {
  if (!interrupt) return null;
  const value = interrupt.value ?? {};
  return (
    <div className="interrupt" data-testid="interrupt">
      <p data-testid="interrupt-question">{value.question ?? JSON.stringify(value)}</p>
      <button type="button" data-testid="resume" onClick={() => onResume("yes")}>Answer “yes”</button>
    </div>
  );
}

function inputFor(mode, text) {
  if (mode === "slow") return { steps: Number(text) || 8, delay: 0.5 };
  if (mode === "asker") return { question: text };
  return { messages: [{ type: "human", content: text }] };
}

function App() {
  const [threadId, setThreadId] = useState(params.get("thread"));
  const [draft, setDraft] = useState("");
  const stream = useStream({
    apiUrl: config.apiUrl,
    apiKey: config.apiKey,
    assistantId: config.assistant,
    threadId,
    onThreadId: (id) => { setThreadId(id); keepThreadInUrl(id); },
    reconnectOnMount: true,
    onError: (error) => window.__errors.push(String(error?.message || error)),
  });
  const values = stream.values ?? {};
  const send = (event) => {
    event.preventDefault();
    // The chat graph's scripted model waits this long between tokens (tests/agentserver/project/graphs.py).
    const configurable = config.mode === "chat" ? { token_delay: 0.25 } : {};
    stream.submit(inputFor(config.mode, draft), { config: { configurable } });
    setDraft("");
  };
  const resume = (answer) => stream.submit(undefined, { command: { resume: answer } });
  return (
    <main>
      <header>
        <h1>useStream test page</h1>
        <p className="meta">
          <span data-testid="mode">{config.mode}</span> · <span data-testid="status">
            {stream.isLoading ? "running" : "idle"}</span> · thread <code data-testid="thread">{threadId ?? "none"}</code>
        </p>
      </header>
      {config.mode === "chat" && <Messages messages={stream.messages} />}
      {config.mode === "slow" && <Ticks ticks={values.ticks ?? []} />}
      {config.mode === "asker" && (
        <>
          <Interrupt interrupt={stream.interrupt} onResume={resume} />
          {values.answer != null && <p data-testid="answer">Answer: {values.answer}</p>}
        </>
      )}
      {stream.error && <p className="error" data-testid="error">{String(stream.error?.message || stream.error)}</p>}
      <form onSubmit={send}>
        <input data-testid="input" value={draft} onChange={(e) => setDraft(e.target.value)}
               placeholder={config.mode === "slow" ? "steps" : "Say something"} />
        <button type="submit" data-testid="send" disabled={stream.isLoading}>Send</button>
      </form>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<App />);
