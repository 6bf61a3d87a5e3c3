import { useMemo } from "react";

import { renderMarkdown } from "../lib/markdown";

/** Markdown from the model, rendered safely (see lib/markdown.ts). */
export function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  // Safe: renderMarkdown escapes all HTML in `text` (raw HTML is disabled).
  return <div className="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}
