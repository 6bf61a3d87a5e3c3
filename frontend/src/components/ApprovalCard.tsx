import { type KeyboardEvent, useEffect, useId, useRef, useState } from "react";

import {
  type ActionRequest,
  type Approval,
  type Decision,
  DECISION_LABELS,
  type DecisionType,
  describeDecision,
  parseArgs,
} from "../lib/approvals";
import { prettyJson } from "../lib/format";
import type { Approvals, ApprovalState } from "../lib/useApprovals";

type Mode = "view" | "edit" | "reject" | "respond";

interface ReviewProps {
  action: ActionRequest;
  /** "Call 1 of 2" when one request asks about several calls. */
  position?: string;
  /** The decision already made for this call (answered approvals, or a choice among several calls). */
  decided: Decision | undefined;
  /** Whether `decided` was sent (otherwise it is a choice waiting for the other calls' decisions). */
  sent: boolean;
  disabled: boolean;
  onDecide: (decision: Decision) => void;
}

const FORM_TITLES: Record<Exclude<Mode, "view">, { label: string; submit: string }> = {
  edit: { label: "Arguments (JSON)", submit: "Run with these arguments" },
  reject: { label: "Reason for rejecting (the agent sees it)", submit: "Reject the call" },
  respond: { label: "Your answer, given to the agent instead of the tool's result", submit: "Send the answer" },
};

/** One tool call under review: its arguments, and the decisions it allows as buttons, each with its small form. */
function ActionReview({ action, position, decided, sent, disabled, onDecide }: ReviewProps) {
  const [mode, setMode] = useState<Mode>("view");
  const [text, setText] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const field = useRef<HTMLTextAreaElement>(null);
  const fieldId = useId();
  const problemId = useId();
  const allows = (kind: DecisionType) => action.allowed.includes(kind);

  useEffect(() => {
    if (mode !== "view") field.current?.focus();
  }, [mode]);

  function open(next: Mode) {
    setProblem(null);
    setText(next === "edit" ? prettyJson(action.args) : "");
    setMode(next);
  }

  function submit() {
    if (mode === "edit") {
      const parsed = parseArgs(text);
      if ("error" in parsed) {
        setProblem(parsed.error);
        field.current?.focus();
        return;
      }
      onDecide({ type: "edit", edited_action: { name: action.name, args: parsed.args } });
    } else if (mode === "reject") {
      onDecide(text.trim() ? { type: "reject", message: text.trim() } : { type: "reject" });
    } else if (mode === "respond") {
      if (!text.trim()) {
        setProblem("Write the answer the agent should get instead of the tool's result.");
        field.current?.focus();
        return;
      }
      onDecide({ type: "respond", message: text.trim() });
    }
    setMode("view");
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key === "Escape") {
      event.preventDefault();
      setMode("view");
    } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      submit();
    }
  }

  const edited = decided?.type === "edit" ? decided.edited_action?.args : undefined;
  return (
    <div className="approval-action" data-tool={action.name}>
      {position ? <p className="approval-position">{position}: <code className="tool-name">{action.name}</code></p> : null}
      {mode === "edit" && !decided ? null : (
        <div className="tool-part">
          <span className="tool-part-label">{edited ? "Arguments asked for" : "Arguments"}</span>
          <pre className="tool-args">{prettyJson(action.args) || "{}"}</pre>
        </div>
      )}
      {edited ? (
        <div className="tool-part">
          <span className="tool-part-label">Arguments it ran with</span>
          <pre className="tool-args">{prettyJson(edited)}</pre>
        </div>
      ) : null}
      {decided ? (
        <p className="approval-decision" data-decision={decided.type}>
          {sent ? describeDecision(decided) : `Your choice: ${DECISION_LABELS[decided.type].toLowerCase()}` +
            (decided.message ? ` (“${decided.message}”)` : "") + ". Sent with the other decisions."}
        </p>
      ) : mode === "view" ? (
        <div className="approval-buttons">
          {allows("approve") ? (
            <button type="button" className="button button-primary" disabled={disabled}
                    onClick={() => onDecide({ type: "approve" })}>Approve</button>
          ) : null}
          {allows("edit") ? (
            <button type="button" className="button" disabled={disabled} onClick={() => open("edit")}>Edit</button>
          ) : null}
          {allows("reject") ? (
            <button type="button" className="button" disabled={disabled} onClick={() => open("reject")}>Reject</button>
          ) : null}
          {allows("respond") ? (
            <button type="button" className="button" disabled={disabled}
                    onClick={() => open("respond")}>Respond</button>
          ) : null}
        </div>
      ) : (
        <form className="approval-form" noValidate onSubmit={(event) => { event.preventDefault(); submit(); }}>
          <label htmlFor={fieldId} className="tool-part-label">{FORM_TITLES[mode].label}</label>
          <textarea id={fieldId} ref={field} value={text} rows={mode === "edit" ? 5 : 3}
                    spellCheck={mode !== "edit"} className={mode === "edit" ? "approval-json" : undefined}
                    aria-invalid={problem ? true : undefined} aria-describedby={problem ? problemId : undefined}
                    onChange={(event) => { setText(event.target.value); setProblem(null); }} onKeyDown={onKeyDown} />
          {problem ? <p id={problemId} className="approval-problem" role="alert">{problem}</p> : null}
          <div className="approval-buttons">
            <button type="submit" className={mode === "reject" ? "button button-danger" : "button button-primary"}
                    disabled={disabled}>{FORM_TITLES[mode].submit}</button>
            <button type="button" className="button" onClick={() => setMode("view")}>Cancel</button>
          </div>
        </form>
      )}
    </div>
  );
}

interface Props {
  approval: Approval;
  state: ApprovalState | undefined;
  onDecide: (approval: Approval, decisions: Decision[]) => void;
}

/** A request to approve tool calls: each call with Approve, Edit, Reject and Respond (those it allows); once
 * answered, what was decided. Several calls in one request are all decided before the answer is sent. */
export function ApprovalCard({ approval, state, onDecide }: Props) {
  const [chosen, setChosen] = useState<(Decision | undefined)[]>([]);
  const answered = approval.status === "answered";
  const card = useRef<HTMLElement>(null);
  const wasAnswered = useRef(answered);

  // The buttons that had the focus are gone once the answer is in: the card keeps it, for the keyboard.
  useEffect(() => {
    const node = card.current;
    const lost = document.activeElement === document.body || (node?.contains(document.activeElement) ?? false);
    if (answered && !wasAnswered.current && node && lost) node.focus();
    wasAnswered.current = answered;
  }, [answered]);
  const several = approval.actions.length > 1;
  const sending = Boolean(state?.sending);
  const status = answered
    ? approval.decisions?.map((d) => DECISION_LABELS[d.type]).join(", ") || "Answered"
    : sending ? "Sending…" : "Waiting for you";

  function choose(index: number, decision: Decision) {
    if (!several) {
      onDecide(approval, [decision]);
      return;
    }
    const next = [...chosen];
    next[index] = decision;
    setChosen(next);
  }

  const allChosen = several && approval.actions.every((_, index) => chosen[index]);
  return (
    <section ref={card} tabIndex={-1} className="approval" data-status={answered ? "answered" : "pending"} data-interrupt={approval.interruptId}
             aria-label={`${answered ? "Approval" : "Approval needed"}: ${approval.actions.map((a) => a.name).join(", ")}`}>
      <header className="tool-call-head">
        <span className="tool-label">{answered ? "Approval" : "Approval needed"}</span>
        {[...new Set(approval.actions.map((a) => a.name))].map((name) => (
          <code key={name} className="tool-name" aria-hidden="true">{name}</code>
        ))}
        {several ? <span className="approval-count">{approval.actions.length} calls</span> : null}
        <span className={`badge ${answered ? "badge-complete" : "badge-pending"}`}>{status}</span>
      </header>
      <div className="tool-call-body">
        {approval.actions.map((action, index) => (
          <ActionReview key={index} action={action} disabled={sending || answered} sent={answered}
                        position={several ? `Call ${index + 1} of ${approval.actions.length}` : undefined}
                        decided={answered ? approval.decisions?.[index] : chosen[index]}
                        onDecide={(decision) => choose(index, decision)} />
        ))}
        {several && !answered ? (
          <div className="approval-buttons">
            <button type="button" className="button button-primary" disabled={!allChosen || sending}
                    onClick={() => onDecide(approval, chosen as Decision[])}>
              Send the {approval.actions.length} decisions
            </button>
            {chosen.some(Boolean) ? (
              <button type="button" className="button" disabled={sending} onClick={() => setChosen([])}>
                Start over
              </button>
            ) : null}
          </div>
        ) : null}
        {state?.error ? <div className="error-box approval-error" role="alert"><p>{state.error}</p></div> : null}
      </div>
    </section>
  );
}

/** The approval cards of one place (a call of the coordinator, a subagent's card, the end of the conversation). */
export function ApprovalList({ items, approvals }: { items: readonly Approval[] | undefined; approvals: Approvals }) {
  if (!items?.length) return null;
  return (
    <div className="approval-list">
      {items.map((approval) => (
        <ApprovalCard key={approval.interruptId} approval={approval} state={approvals.states[approval.interruptId]}
                      onDecide={(which, decisions) => void approvals.decide(which, decisions)} />
      ))}
    </div>
  );
}
