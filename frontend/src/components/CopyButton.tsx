import { useEffect, useState } from "react";

import { copyText } from "../lib/clipboard";

/** A button that copies `text` and says so for two seconds. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  useEffect(() => {
    if (state === "idle") return;
    const timer = window.setTimeout(() => setState("idle"), 2000);
    return () => window.clearTimeout(timer);
  }, [state]);
  return (
    <button
      type="button"
      className="action-button"
      aria-label={label}
      title={label}
      onClick={() => void copyText(text).then((ok) => setState(ok ? "copied" : "failed"))}
    >
      {state === "copied" ? "Copied" : state === "failed" ? "Copy failed" : "Copy"}
    </button>
  );
}
