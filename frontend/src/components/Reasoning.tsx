import { useId, useState } from "react";

/**
 * The model's reasoning summary in a collapsible "Thinking" block: open while the model is still thinking,
 * collapsed once it is done, unless the reader toggled it themselves.
 */
export function Reasoning({ text, thinking }: { text: string; thinking: boolean }) {
  const [choice, setChoice] = useState<boolean | null>(null);
  const open = choice ?? thinking;
  const bodyId = useId();
  return (
    <div className="thinking" data-thinking={thinking ? "true" : "false"}>
      <button
        type="button"
        className="thinking-toggle"
        aria-expanded={open}
        aria-controls={bodyId}
        onClick={() => setChoice(!open)}
      >
        <span className="chevron" aria-hidden="true" />
        {thinking ? "Thinking…" : "Thinking"}
      </button>
      <div id={bodyId} className="thinking-body" hidden={!open}>
        {text}
      </div>
    </div>
  );
}
