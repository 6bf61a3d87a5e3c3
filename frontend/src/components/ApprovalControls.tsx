import "../approvals.css";

import { useCallback, useEffect, useId, useMemo, useState } from "react";

import type { Approvals } from "../lib/useApprovals";

const STORAGE_PREFIX = "chat:approve-tools:";

function stored(threadId: string | null): boolean | null {
  if (!threadId) return null;
  try {
    const value = window.localStorage.getItem(STORAGE_PREFIX + threadId);
    return value === null ? null : value === "true";
  } catch {
    return null;
  }
}

/**
 * The thread's "ask before using tools" choice, kept per thread in this browser. On, a run's config asks before
 * every tool (`approve_tools: true`); off, it sends nothing and the server's CHAT_APPROVE_TOOLS applies.
 */
export function useAskFirst(threadId: string | null) {
  const [askFirst, setAskFirst] = useState<boolean>(() => stored(threadId) ?? false);
  // A new conversation gets its id on the first send: the choice made before then is kept for it.
  useEffect(() => {
    if (!threadId) return;
    const found = stored(threadId);
    if (found === null) {
      try {
        window.localStorage.setItem(STORAGE_PREFIX + threadId, String(askFirst));
      } catch {
        // Storage refused (private mode): the choice lasts as long as the page.
      }
    } else {
      setAskFirst(found);
    }
    // Only when the thread changes: a change of the choice itself is saved by `change`.
  }, [threadId]);

  const change = useCallback((value: boolean) => {
    setAskFirst(value);
    if (!threadId) return;
    try {
      window.localStorage.setItem(STORAGE_PREFIX + threadId, String(value));
    } catch {
      // See above.
    }
  }, [threadId]);

  const runConfig = useMemo(() => (askFirst ? { configurable: { approve_tools: true } } : undefined), [askFirst]);
  return { askFirst, setAskFirst: change, runConfig };
}

interface Props {
  approvals: Approvals;
  askFirst: boolean;
  onAskFirst: (value: boolean) => void;
  /** The tools the server always asks about (CHAT_APPROVE_TOOLS). */
  serverTools: readonly string[];
}

/** Above the composer: the "ask before using tools" switch, what waits for the person, and "Approve all". */
export function ApprovalControls({ approvals, askFirst, onAskFirst, serverTools }: Props) {
  const hintId = useId();
  const pending = approvals.list.filter((a) => a.status === "pending");
  const approvable = pending.filter((a) => a.actions.every((x) => x.allowed.includes("approve")));
  const serverHint = serverTools.length === 0 ? "Off: tools run without asking."
    : serverTools.includes("*") ? "The server asks before every tool anyway."
    : `Off: the server still asks before ${serverTools.join(", ")}.`;
  return (
    <div className="approval-controls">
      <div className="approval-toggle">
        <label className="switch">
          <input type="checkbox" role="switch" checked={askFirst} aria-describedby={hintId}
                 onChange={(event) => onAskFirst(event.target.checked)} />
          <span>Ask before using tools</span>
        </label>
        <span id={hintId} className="approval-hint">
          {askFirst ? "On: the agent asks you before every tool call, from your next message." : serverHint}
        </span>
      </div>
      {approvals.waiting > 1 && approvable.length > 0 ? (
        <button type="button" className="button button-primary approve-all" disabled={approvals.sendingAll}
                onClick={() => void approvals.approveAll()}>
          {approvals.sendingAll ? "Approving…" : `Approve all (${approvals.waiting})`}
        </button>
      ) : null}
      {approvals.loadError ? <p className="approval-problem" role="alert">{approvals.loadError}</p> : null}
      <div className="visually-hidden" role="status" aria-live="polite" aria-atomic="true">
        {approvals.announcement}
      </div>
    </div>
  );
}

/** Under the message box while the agent waits: why nothing can be sent, and, after an attempt, that it was not. */
export function ComposerNotice({ blockedReason, refused }: { blockedReason: string | null; refused: boolean }) {
  if (!blockedReason) return null;
  return (
    <p className={refused ? "composer-notice composer-refused" : "composer-notice"} role={refused ? "alert" : "status"}>
      {refused ? `Not sent: ${blockedReason}` : blockedReason}
    </p>
  );
}

export function waitingReason(waiting: number): string | null {
  if (waiting === 0) return null;
  const calls = waiting === 1 ? "a tool call" : `${waiting} tool calls`;
  return `The agent is waiting for your approval of ${calls}. Answer above (approve, edit, reject or respond) ` +
    "before sending a new message.";
}
