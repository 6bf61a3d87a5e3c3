import { type FormEvent, type KeyboardEvent, useEffect, useRef, useState } from "react";

import { ComposerNotice } from "./ApprovalControls";

interface Props {
  running: boolean;
  stopping: boolean;
  onSend: (text: string) => void;
  onStop: () => void;
  /** False while a run is only being started: there is nothing to stop yet. */
  canStop?: boolean;
  /** Why a message cannot be sent now (the agent waits for approvals): sending is refused with it. */
  blockedReason?: string | null;
}

/** The message box: Enter sends, Shift+Enter adds a line; sending waits for the run to end, Stop cancels it. */
export function Composer({ running, stopping, onSend, onStop, canStop = true, blockedReason = null }: Props) {
  const [text, setText] = useState("");
  const [refused, setRefused] = useState(false);
  const box = useRef<HTMLTextAreaElement>(null);
  useEffect(() => setRefused(false), [blockedReason]);
  const canSend = !running && text.trim().length > 0;

  useEffect(() => {
    const node = box.current;
    if (!node) return;
    node.style.height = "auto";
    node.style.height = `${Math.min(node.scrollHeight, 240)}px`;
  }, [text]);

  function send() {
    if (!canSend) return;
    setRefused(Boolean(blockedReason));
    if (blockedReason) return;
    onSend(text.trim());
    setText("");
    box.current?.focus();
  }

  function onSubmit(event: FormEvent) {
    event.preventDefault();
    send();
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      send();
    }
  }

  return (
    <form className="composer" onSubmit={onSubmit}>
      <label htmlFor="composer-input" className="visually-hidden">Message to the agent</label>
      <textarea
        id="composer-input"
        ref={box}
        rows={1}
        value={text}
        placeholder="Ask the agent…"
        aria-describedby="composer-hint composer-state"
        onChange={(event) => setText(event.target.value)}
        onKeyDown={onKeyDown}
      />
      <ComposerNotice blockedReason={blockedReason} refused={refused} />
      <span id="composer-hint" className="composer-hint">Enter sends · Shift+Enter adds a line</span>
      <span id="composer-state" className="visually-hidden">
        {running ? "The agent is working: you can send once it has finished, or stop it." : blockedReason ?? ""}
      </span>
      <div className="composer-actions">
        {running && canStop ? (
          <button type="button" className="button button-stop" onClick={onStop} disabled={stopping}>
            {stopping ? "Stopping…" : "Stop"}
          </button>
        ) : null}
        <button type="submit" className="button button-primary" disabled={!canSend}>Send</button>
      </div>
    </form>
  );
}
