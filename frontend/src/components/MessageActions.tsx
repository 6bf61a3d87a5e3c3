import { type FormEvent, type KeyboardEvent, type ReactNode, useEffect, useRef, useState } from "react";

import { CopyButton } from "./CopyButton";

/** What the root transcript offers on its messages (subagent transcripts offer nothing). */
export interface TranscriptActions {
  /** No run is going or starting: edits and regenerations are possible. */
  idle: boolean;
  /** The branch switcher ("< 2/3 >") that belongs under the message at `index`, if any. */
  switcher: (index: number) => ReactNode;
  canEdit: (index: number) => boolean;
  onEdit: (index: number, text: string) => void;
  canRegenerate: (index: number) => boolean;
  onRegenerate: (index: number) => void;
}

export interface BranchSwitcherProps {
  current: number;
  count: number;
  disabled: boolean;
  onSwitch: (index: number) => void;
}

/** "< 2/3 >": which alternative of a forked message is shown, and the way to the others. */
export function BranchSwitcher({ current, count, disabled, onSwitch }: BranchSwitcherProps) {
  return (
    <div className="branch-switcher" role="group" aria-label="Versions of this message">
      <button type="button" className="action-button branch-prev" aria-label="Previous version"
              disabled={disabled || current === 0} onClick={() => onSwitch(current - 1)}>
        <span aria-hidden="true">‹</span>
      </button>
      <span className="branch-position" aria-live="polite">
        <span className="visually-hidden">Version </span>{current + 1}/{count}
      </span>
      <button type="button" className="action-button branch-next" aria-label="Next version"
              disabled={disabled || current === count - 1} onClick={() => onSwitch(current + 1)}>
        <span aria-hidden="true">›</span>
      </button>
    </div>
  );
}

/** A user message: its bubble, then copy, edit and the branch switcher; editing replaces the bubble by a form. */
export function HumanMessage({ index, text, actions }: { index: number; text: string; actions?: TranscriptActions }) {
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(text);
  const box = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    if (!editing || !box.current) return;
    box.current.focus();
    box.current.setSelectionRange(draft.length, draft.length);
    // Only when the form opens, not on every keystroke.
  }, [editing]);

  function submit(event?: FormEvent) {
    event?.preventDefault();
    const cleaned = draft.trim();
    if (!cleaned || !actions) return;
    setEditing(false);
    actions.onEdit(index, cleaned);
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key === "Escape") {
      event.preventDefault();
      setEditing(false);
    } else if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      submit(event);
    }
  }

  if (editing && actions) {
    return (
      <form className="msg msg-human-edit" aria-label="Edit your message" onSubmit={submit}>
        <label className="visually-hidden" htmlFor={`edit-${index}`}>Edited message</label>
        <textarea id={`edit-${index}`} ref={box} value={draft} rows={Math.min(8, draft.split("\n").length + 1)}
                  onChange={(event) => setDraft(event.target.value)} onKeyDown={onKeyDown} />
        <div className="edit-actions">
          <button type="button" className="button" onClick={() => setEditing(false)}>Cancel</button>
          <button type="submit" className="button button-primary" disabled={!draft.trim() || !actions.idle}>
            Send
          </button>
        </div>
      </form>
    );
  }
  return (
    <article className="msg msg-human" aria-label="You said" data-index={index}>
      <div className="msg-bubble">
        <div className="msg-text">{text}</div>
      </div>
      {actions ? (
        <div className="msg-actions">
          <CopyButton text={text} label="Copy message" />
          {actions.canEdit(index) ? (
            <button type="button" className="action-button" disabled={!actions.idle} aria-label="Edit message"
                    title="Edit message" onClick={() => { setDraft(text); setEditing(true); }}>
              Edit
            </button>
          ) : null}
          {actions.switcher(index)}
        </div>
      ) : null}
    </article>
  );
}

/** Under an answer: copy, regenerate (the last answer only) and the branch switcher. */
export function AnswerActions({ index, text, pending, actions }: {
  index: number; text: string; pending: boolean; actions: TranscriptActions;
}) {
  // While the answer streams the row keeps its place but stays invisible, so nothing moves when it appears.
  return (
    <div className="msg-actions" data-pending={pending ? "true" : undefined} aria-hidden={pending || undefined}>
      {text ? <CopyButton text={text} label="Copy answer" /> : null}
      {actions.canRegenerate(index) ? (
        <button type="button" className="action-button" disabled={!actions.idle || pending}
                aria-label="Regenerate answer" title="Regenerate answer" onClick={() => actions.onRegenerate(index)}>
          Regenerate
        </button>
      ) : null}
      {actions.switcher(index)}
    </div>
  );
}
