import { type MouseEvent, useMemo } from "react";

import { copyText } from "../lib/clipboard";
import { renderMarkdown } from "../lib/markdown";

function onCodeCopy(event: MouseEvent<HTMLDivElement>) {
  const button = (event.target as HTMLElement).closest<HTMLButtonElement>("button.copy-code");
  const code = button?.closest(".code-block")?.querySelector("code");
  if (!button || !code) return;
  void copyText(code.textContent ?? "").then((ok) => {
    button.textContent = ok ? "Copied" : "Copy failed";
    window.setTimeout(() => {
      button.textContent = "Copy";
    }, 2000);
  });
}

/** Markdown from the model, rendered safely (see lib/markdown.ts); code blocks have their own copy button. */
export function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  // Safe: renderMarkdown escapes all HTML in `text` (raw HTML is disabled).
  return <div className="markdown" onClick={onCodeCopy} dangerouslySetInnerHTML={{ __html: html }} />;
}
