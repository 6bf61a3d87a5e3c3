import { type BaseMessage, HumanMessage } from "@langchain/core/messages";
import { type SubagentDiscoverySnapshot, useStream } from "@langchain/react";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";

import { type BranchMap, getBranches, messagesAt, startFork } from "../api";
import type { PageConfig } from "../config";
import { describeError } from "../lib/errors";
import { type CallOf, kindOf, toolCallsOf, toolResultsById } from "../lib/messages";
import { settledStateFetch } from "../lib/settledState";
import { useApprovals, usePlacement, waitingFor } from "../lib/useApprovals";
import { ApprovalList } from "./ApprovalCard";
import { ApprovalControls, useAskFirst, waitingReason } from "./ApprovalControls";
import { Composer } from "./Composer";
import { BranchSwitcher, type TranscriptActions } from "./MessageActions";
import { MessageList, turnEnds } from "./MessageList";
import type { Status } from "./Status";
import { SubagentCard, type SubagentView } from "./SubagentCard";

// The server assigns every event an `event_id`; the client drops the ones it already has after a reconnect, so a
// longer retry budget than the default only means surviving longer outages.
const MAX_RECONNECT_ATTEMPTS = 10;
// The client's REST calls (the thread's state on load among them); a constant, so the client is built once.
const CLIENT_OPTIONS = { fetch: settledStateFetch };
const EXAMPLE_PROMPT = "Research LangGraph streaming, and separately calculate 42 * 17.";

interface Props {
  config: PageConfig;
  /** The thread to open, or null for a new conversation (its id is minted on the first send). */
  threadId: string | null;
  /** The thread id is not among the caller's conversations. */
  missing: boolean;
  onThreadCreated: (threadId: string) => void;
  onThreadsChanged: () => void;
  onReload: () => void;
}

function subagentStatus(snapshot: SubagentDiscoverySnapshot, active: boolean): Status {
  if (snapshot.status === "complete") return "complete";
  if (snapshot.status === "error") return "error";
  return active ? "running" : "stopped";
}

function taskArgs(call: CallOf): { description?: string; subagent_type?: string } {
  return call.args && typeof call.args === "object" ? (call.args as Record<string, string>) : {};
}

/** Whether a response to a streaming request succeeded: that is when a reconnect has worked. */
function isStreamRequest(input: RequestInfo | URL): boolean {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  return /\/stream(\/events)?\/?(\?|$)/.test(url);
}

export function Chat({ config, threadId, missing, onThreadCreated, onThreadsChanged, onReload }: Props) {
  const [reconnecting, setReconnecting] = useState<number | null>(null);
  const [offline, setOffline] = useState(() => !navigator.onLine);
  const [stopping, setStopping] = useState(false);
  const [stopped, setStopped] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);
  // Branches: where the shown branch forks (from the server), and the branch shown when it is not the newest one.
  const [branches, setBranches] = useState<BranchMap | null>(null);
  const [view, setView] = useState<{ head: string; messages: BaseMessage[] } | null>(null);
  const [forking, setForking] = useState(false);
  const [switching, setSwitching] = useState(false);
  const localRunId = useRef<string | null>(null);

  const trackingFetch = useCallback<typeof fetch>(async (input, init) => {
    const response = await window.fetch(input, init);
    if (response.ok && isStreamRequest(input)) setReconnecting(null);
    return response;
  }, []);

  const stream = useStream({
    assistantId: "agent",
    apiUrl: config.apiUrl,
    threadId,
    transport: "sse",
    fetch: trackingFetch,
    callerOptions: CLIENT_OPTIONS,
    maxReconnectAttempts: MAX_RECONNECT_ATTEMPTS,
    onReconnect: ({ attempt }) => setReconnecting(attempt),
    onThreadId: onThreadCreated,
    onCreated: ({ runId }) => {
      localRunId.current = runId;
      onThreadsChanged();
    },
    onCompleted: () => {
      localRunId.current = null;
      onThreadsChanged();
    },
  });

  useEffect(() => {
    const goOffline = () => setOffline(true);
    const goOnline = () => setOffline(false);
    window.addEventListener("offline", goOffline);
    window.addEventListener("online", goOnline);
    return () => {
      window.removeEventListener("offline", goOffline);
      window.removeEventListener("online", goOnline);
    };
  }, []);

  const running = stream.isLoading || forking;
  // The newest branch streams through the client; an older one is a snapshot read from its checkpoint.
  const messages: readonly BaseMessage[] = view ? view.messages : stream.messages;
  const results = useMemo(() => toolResultsById(messages), [messages]);
  const threadKey = stream.threadId ?? threadId;
  const idle = !running && !switching && !stream.isThreadLoading;
  const approvals = useApprovals(stream, config.apiUrl, threadKey);
  const subagentIds = useMemo(() => [...stream.subagents.keys()], [stream.subagents]);
  const placement = usePlacement(view ? [] : approvals.list, messages, subagentIds);
  const ask = useAskFirst(threadKey);
  const blockedReason = view ? null : waitingReason(approvals.waiting);

  const loadBranches = useCallback(
    async (head: string | null) => {
      if (!threadKey) return;
      try {
        setBranches(await getBranches(config.apiUrl, threadKey, head));
      } catch (error) {
        setActionError(describeError(error, config, "Could not load the conversation's versions").message);
      }
    },
    [config, threadKey],
  );

  // Once the thread is loaded and after every run: the forks of the newest branch.
  useEffect(() => {
    if (threadKey && !stream.isLoading && !stream.isThreadLoading && !view) void loadBranches(null);
  }, [threadKey, stream.isLoading, stream.isThreadLoading, view, loadBranches]);

  const switchTo = useCallback(
    async (head: string) => {
      if (!threadKey || !branches) return;
      setSwitching(true);
      setActionError(null);
      try {
        if (head === branches.latest) {
          setView(null);
          await loadBranches(null);
        } else {
          const found = (await messagesAt(config.apiUrl, threadKey, head)) as BaseMessage[];
          setView({ head, messages: found });
          await loadBranches(head);
        }
      } catch (error) {
        setActionError(describeError(error, config, "Could not open that version").message);
      } finally {
        setSwitching(false);
      }
    },
    [branches, config, loadBranches, threadKey],
  );

  // Edits, regenerations and messages sent from an older branch start a run from an earlier checkpoint; the chat
  // then reconnects from scratch, so the streaming client follows the new branch.
  const fork = useCallback(
    async (checkpointId: string, input: Record<string, unknown> | null) => {
      if (!threadKey) return;
      setForking(true);
      setActionError(null);
      try {
        await startFork(config.apiUrl, threadKey, checkpointId, input, ask.runConfig?.configurable);
        onThreadsChanged();
        onReload();
      } catch (error) {
        setActionError(describeError(error, config, "Could not start the run").message);
        setForking(false);
      }
    },
    [config, onReload, onThreadsChanged, threadKey, ask.runConfig],
  );

  // Cards for the coordinator's `task` calls, in the order the calls were made.
  const subagentFor = useCallback(
    (call: CallOf): SubagentView => {
      const snapshot = stream.subagents.get(call.id);
      const args = taskArgs(call);
      const result = results.get(call.id)?.content;
      if (!snapshot) {
        return { id: call.id, name: args.subagent_type ?? "subagent", taskInput: args.description,
                 status: result !== undefined ? "complete" : running ? "pending" : "stopped", result };
      }
      return { id: call.id, name: snapshot.name, taskInput: snapshot.taskInput ?? args.description,
               status: subagentStatus(snapshot, running), snapshot, result };
    },
    [stream.subagents, results, running],
  );

  const renderCall = useCallback(
    (call: CallOf) => {
      if (call.name !== "task") return null;
      return (
        <SubagentCard stream={stream} subagent={waitingFor(subagentFor(call), placement)}>
          <ApprovalList items={placement.inSubagent.get(call.id)} approvals={approvals} />
        </SubagentCard>
      );
    },
    [stream, subagentFor, placement, approvals],
  );

  // Subagents the client discovered before the message that started them arrived.
  const shownIds = new Set(messages.filter((m) => kindOf(m) === "ai").flatMap((m) => toolCallsOf(m).map((c) => c.id)));
  const orphans = [...stream.subagents.values()].filter((s) => s.depth <= 1 && !shownIds.has(s.id));

  const send = useCallback(
    (text: string) => {
      setActionError(null);
      setStopped(false);
      if (view) {
        void fork(view.head, { messages: [{ type: "human", content: text }] });
        return;
      }
      if (blockedReason) return;  // the composer already said why
      stream.submit({ messages: [new HumanMessage(text)] }, { config: ask.runConfig }).catch((error: unknown) => {
        setActionError(describeError(error, config).message);
      });
    },
    [stream, config, view, fork, blockedReason, ask.runConfig],
  );

  const ends = useMemo(() => turnEnds(messages), [messages]);
  const entryAt = useCallback(
    (index: number) => {
      const entry = branches?.messages[index];
      return entry && entry.id === messages[index]?.id ? entry : undefined;
    },
    [branches, messages],
  );
  const actions: TranscriptActions = {
    // Editing or regenerating while the agent waits would leave its questions unanswered.
    idle: idle && !blockedReason,
    switcher: (index) => {
      const found = (branches?.forks ?? []).filter((f) => {
        const at = messages[f.message_index];
        if (!at) return false;
        return (kindOf(at) === "human" ? f.message_index : ends[f.message_index]) === index;
      });
      return found.map((f) => (
        <BranchSwitcher key={f.checkpoint_id} current={f.current} count={f.heads.length} disabled={!idle}
                        onSwitch={(next) => void switchTo(f.heads[next])} />
      ));
    },
    canEdit: (index) => Boolean(entryAt(index)?.edit_from),
    onEdit: (index, text) => {
      const from = entryAt(index)?.edit_from;
      if (from) void fork(from, { messages: [{ type: "human", content: text }] });
    },
    canRegenerate: (index) => index === ends[messages.length - 1] && Boolean(entryAt(index)?.regenerate_from),
    onRegenerate: (index) => {
      const from = entryAt(index)?.regenerate_from;
      if (from) void fork(from, null);
    },
  };

  const stop = useCallback(async () => {
    setStopping(true);
    setActionError(null);
    try {
      const current = stream.threadId;
      // A run started before a reload is not this page's own: its id is in the thread's latest checkpoint.
      let runId = localRunId.current;
      if (!runId && current) {
        const state = await stream.client.threads.getState(current);
        const candidate = (state?.metadata as Record<string, unknown> | undefined)?.run_id;
        runId = typeof candidate === "string" ? candidate : null;
      }
      // Wait for the server to stop the run, so that the next message cannot collide with it.
      if (current && runId) await stream.client.runs.cancel(current, runId, true);
      await stream.stop({ cancel: false });
      setStopped(true);
    } catch (error) {
      setActionError(describeError(error, config, "Could not stop the run").message);
    } finally {
      setStopping(false);
    }
  }, [stream, config]);

  const transcript = useRef<HTMLDivElement>(null);
  const stickToBottom = useRef(true);
  useEffect(() => {
    const node = transcript.current;
    if (node && stickToBottom.current) node.scrollTop = node.scrollHeight;
  });

  const runError = stream.error && !approvals.shownInCard(stream.error) ? describeError(stream.error, config) : null;
  const empty = messages.length === 0 && !stream.isThreadLoading && !forking;
  const lastIsAi = messages.length > 0 && kindOf(messages[messages.length - 1]) === "ai";

  return (
    <div className="chat">
      {offline || reconnecting !== null ? (
        <div className="connection" role="status">
          {offline
            ? "You are offline. The conversation continues when the connection is back."
            : `Connection lost. Reconnecting (attempt ${reconnecting} of ${MAX_RECONNECT_ATTEMPTS})…`}
          <button type="button" className="link-button" onClick={onReload}>Reload the conversation</button>
        </div>
      ) : null}
      <div
        ref={transcript}
        className="transcript"
        role="log"
        aria-label="Conversation"
        aria-busy={running || stream.isThreadLoading}
        tabIndex={0}
        onScroll={(event) => {
          const node = event.currentTarget;
          stickToBottom.current = node.scrollHeight - node.scrollTop - node.clientHeight < 80;
        }}
      >
        <div className="transcript-inner">
          {stream.isThreadLoading ? <p className="muted">Loading the conversation…</p> : null}
          {empty && missing ? (
            <p className="notice" role="status">
              This conversation was not found. It may have been deleted, or it belongs to someone else.
            </p>
          ) : null}
          {empty && !missing ? (
            <div className="welcome">
              <h2>Ask the deep agent</h2>
              <p>
                A coordinator delegates lookups to the <strong>researcher</strong> and arithmetic to{" "}
                <strong>math-whiz</strong>, and shows their work live. Try:
              </p>
              <p className="example">{EXAMPLE_PROMPT}</p>
            </div>
          ) : null}
          <MessageList messages={messages} toolCalls={view ? [] : stream.toolCalls} active={running && !view}
                       renderCall={renderCall} actions={actions}
                       afterCall={(call) => (
                         <ApprovalList items={placement.afterCall.get(call.id)} approvals={approvals} />
                       )} />
          <ApprovalList items={placement.elsewhere} approvals={approvals} />
          {view ? (
            <p className="muted branch-note" role="status">
              You are looking at an earlier version of this conversation. A message sent now continues it from here.
            </p>
          ) : null}
          {forking ? (
            <p className="working" role="status"><span className="spinner" aria-hidden="true" /> Starting the run…</p>
          ) : null}
          {(view ? [] : orphans).map((snapshot) => (
            <SubagentCard
              key={snapshot.id}
              stream={stream}
              subagent={waitingFor({ id: snapshot.id, name: snapshot.name, taskInput: snapshot.taskInput, snapshot,
                                     status: subagentStatus(snapshot, running),
                                     result: results.get(snapshot.id)?.content }, placement)}
            >
              <ApprovalList items={placement.inSubagent.get(snapshot.id)} approvals={approvals} />
            </SubagentCard>
          ))}
          {running && !lastIsAi ? (
            <p className="working" role="status"><span className="spinner" aria-hidden="true" /> The agent is working…</p>
          ) : null}
          {stopped && !running ? <p className="muted" role="status">You stopped the run.</p> : null}
          {runError ? (
            <div className="error-box" role="alert">
              <strong>{runError.title}</strong>
              <p>{runError.message}</p>
              {runError.loginUrl ? <a href={runError.loginUrl}>Log in</a> : null}
            </div>
          ) : null}
          {actionError ? <div className="error-box" role="alert"><p>{actionError}</p></div> : null}
        </div>
      </div>
      <ApprovalControls approvals={approvals} askFirst={ask.askFirst} onAskFirst={ask.setAskFirst}
                        serverTools={config.approveTools} />
      <Composer running={running} stopping={stopping} onSend={send} onStop={stop} canStop={!forking}
                blockedReason={blockedReason} />
    </div>
  );
}
