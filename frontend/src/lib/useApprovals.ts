// The thread's approvals on the page: loaded from the server (so a reload shows the same cards, decided ones too),
// answered with the streaming client's `respond` / `respondAll` (input.respond), announced to screen readers.
import type { BaseMessage } from "@langchain/core/messages";
import type { AnyStream } from "@langchain/react";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";

import {
  type Approval,
  asksAbout,
  type Decision,
  DECISION_LABELS,
  describeRespondError,
  getApprovals,
  pendingActions,
} from "./approvals";
import type { SubagentView } from "../components/SubagentCard";
import { type CallOf, kindOf, toolCallsOf } from "./messages";

/** What the page did with one approval since it was loaded. */
export interface ApprovalState {
  sending?: boolean;
  error?: string;
}

export interface Approvals {
  list: Approval[];
  states: Record<string, ApprovalState>;
  /** Tool calls still waiting for the person (an approval may ask about several). */
  waiting: number;
  announcement: string;
  loadError: string | null;
  decide: (approval: Approval, decisions: Decision[]) => Promise<void>;
  approveAll: () => Promise<void>;
  sendingAll: boolean;
  /** Whether an error the streaming client reports is an answer's refusal, already shown in its card. */
  shownInCard: (error: unknown) => boolean;
}

function toolOf(approval: Approval): string {
  return approval.actions.map((a) => a.name).join(", ") || "a tool";
}

export function useApprovals(stream: AnyStream, apiUrl: string, threadId: string | null): Approvals {
  const [list, setList] = useState<Approval[]>([]);
  const [states, setStates] = useState<Record<string, ApprovalState>>({});
  const [announcement, setAnnouncement] = useState("");
  const [loadError, setLoadError] = useState<string | null>(null);
  const [sendingAll, setSendingAll] = useState(false);
  const seen = useRef<Set<string> | null>(null);
  const refusals = useRef<unknown[]>([]);
  const loads = useRef(0);
  const loadedFor = useRef<string | null>(null);

  const load = useCallback(async () => {
    if (!threadId) return;
    const seq = ++loads.current;
    try {
      const found = await getApprovals(apiUrl, threadId);
      if (seq !== loads.current) return;
      loadedFor.current = threadId;
      setList(found);
      setLoadError(null);
      const fresh = found.filter((a) => a.status === "pending" && !seen.current?.has(a.interruptId));
      if (fresh.length > 0) {
        const where = (a: Approval) => (a.namespace.length ? " (asked by a subagent)" : "");
        setAnnouncement(fresh.length === 1
          ? `Approval needed: ${toolOf(fresh[0])}${where(fresh[0])}.`
          : `${fresh.length} approvals needed: ${fresh.map(toolOf).join(", ")}.`);
      }
      seen.current = new Set([...(seen.current ?? []), ...found.map((a) => a.interruptId)]);
    } catch (error) {
      if (seq === loads.current) setLoadError(error instanceof Error ? error.message : String(error));
    }
  }, [apiUrl, threadId]);

  // After loading the thread, and whenever a run starts or ends (a run that ends waiting has asked). A new
  // thread exists on the server only once its first run has started there: not asked before that run ends.
  useEffect(() => {
    if (stream.isThreadLoading || (stream.isLoading && loadedFor.current !== threadId)) return;
    void load();
  }, [load, threadId, stream.isThreadLoading, stream.isLoading, stream.interrupts.length]);

  const setState = (ids: string[], state: ApprovalState) =>
    setStates((current) => ({ ...current, ...Object.fromEntries(ids.map((id) => [id, state])) }));

  const answered = (ids: string[], decisions: Record<string, Decision[]>) =>
    setList((current) => current.map((a) => (ids.includes(a.interruptId)
      ? { ...a, status: "answered", decisions: decisions[a.interruptId] } : a)));

  const decide = useCallback(async (approval: Approval, decisions: Decision[]) => {
    const id = approval.interruptId;
    setState([id], { sending: true });
    try {
      await stream.respond({ decisions }, { interruptId: id, namespace: approval.namespace });
      setState([id], {});
      answered([id], { [id]: decisions });
      setAnnouncement(`${toolOf(approval)}: ${decisions.map((d) => DECISION_LABELS[d.type]).join(", ")}.`);
    } catch (error) {
      refusals.current.push(error);
      const message = describeRespondError(error);
      setState([id], { error: message });
      setAnnouncement(message);
    }
    void load();
  }, [stream, load]);

  const approveAll = useCallback(async () => {
    const pending = list.filter((a) => a.status === "pending" && a.actions.every((x) => x.allowed.includes("approve")));
    if (pending.length === 0) return;
    const ids = pending.map((a) => a.interruptId);
    const decisions = Object.fromEntries(pending.map((a) => [a.interruptId, a.actions.map(() => ({ type: "approve" }) as Decision)]));
    setSendingAll(true);
    setState(ids, { sending: true });
    try {
      // One input.respond for all of them: parallel subagents resume together, in one run.
      await stream.respondAll(Object.fromEntries(ids.map((id) => [id, { decisions: decisions[id] }])));
      setState(ids, {});
      answered(ids, decisions);
      setAnnouncement(`Approved all ${pendingActions(pending)} tool calls.`);
    } catch (error) {
      refusals.current.push(error);
      const message = describeRespondError(error);
      setState(ids, { error: message });
      setAnnouncement(message);
    } finally {
      setSendingAll(false);
    }
    void load();
  }, [list, stream, load]);

  const waiting = stream.isLoading ? 0 : pendingActions(list);
  // The streaming client also keeps a refused answer as the run's error: the card says it already.
  const shownInCard = useCallback((error: unknown) => refusals.current.some((refusal) => refusal === error
    || (refusal instanceof Error && error instanceof Error && refusal.message === error.message)), []);
  return { list, states, waiting, announcement, loadError, decide, approveAll, sendingAll, shownInCard };
}

/** Where each approval's card goes: after the coordinator's call it asks about, or in a subagent's card. */
export interface Placement {
  afterCall: Map<string, Approval[]>;
  inSubagent: Map<string, Approval[]>;
  /** Waiting approvals whose call the page does not show (yet): listed at the end of the conversation. */
  elsewhere: Approval[];
  /** The coordinator's calls that wait: asked about, or their subagent asks. */
  waiting: Set<string>;
}

export function usePlacement(list: readonly Approval[], messages: readonly BaseMessage[],
                             subagentIds: readonly string[]): Placement {
  return useMemo(() => {
    const calls: CallOf[] = messages.filter((m) => kindOf(m) === "ai").flatMap((m) => toolCallsOf(m));
    const tasks = new Set([...calls.filter((c) => c.name === "task").map((c) => c.id), ...subagentIds]);
    const placement: Placement = { afterCall: new Map(), inSubagent: new Map(), elsewhere: [], waiting: new Set() };
    const taken = new Set<string>();
    const add = (map: Map<string, Approval[]>, key: string, approval: Approval) =>
      map.set(key, [...(map.get(key) ?? []), approval]);
    for (const approval of list) {
      const pending = approval.status === "pending";
      if (approval.namespace.length > 0 && approval.taskCallId && tasks.has(approval.taskCallId)) {
        add(placement.inSubagent, approval.taskCallId, approval);
        if (pending) placement.waiting.add(approval.taskCallId);
        continue;
      }
      if (pending && approval.namespace.length === 0) {
        calls.filter((c) => asksAbout(approval, c)).forEach((c) => placement.waiting.add(c.id));
      }
      const call = approval.namespace.length === 0
        ? calls.find((c) => !taken.has(c.id) && asksAbout(approval, c)) : undefined;
      if (call) {
        taken.add(call.id);
        add(placement.afterCall, call.id, approval);
      } else if (pending) {
        placement.elsewhere.push(approval);
      }
    }
    return placement;
  }, [list, messages, subagentIds]);
}

/** A subagent that waits for the person (for its delegation, or for one of its own calls) says so on its card. */
export function waitingFor(subagent: SubagentView, placement: Placement): SubagentView {
  const waiting = placement.waiting.has(subagent.id) && !["running", "complete"].includes(subagent.status);
  return waiting ? { ...subagent, status: "waiting" } : subagent;
}
