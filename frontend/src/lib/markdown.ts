// Model output is untrusted: markdown-it with raw HTML off escapes every tag as text, its link validator refuses
// javascript:/vbscript:/file:/data: URLs, and images are off (a remote image would be a tracking pixel).
// Code blocks are highlighted with highlight.js's core and a few common languages (the whole library would add
// ~900 kB); its output is escaped text in <span class="hljs-…"> elements only.
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import MarkdownIt from "markdown-it";

const languages = { bash, css, javascript, json, python, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language);
hljs.registerAliases(["sh", "shell", "console", "zsh"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["yml"], { languageName: "yaml" });

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function highlight(code: string, language: string): string {
  if (language && hljs.getLanguage(language)) return hljs.highlight(code, { language, ignoreIllegals: true }).value;
  return escapeHtml(code);
}

const md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false });
md.disable(["image"]);

const defaultLinkOpen =
  md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));

md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  token.attrSet("target", "_blank");
  token.attrSet("rel", "noopener noreferrer nofollow");
  return defaultLinkOpen(tokens, idx, options, env, self);
};

// A code block with a header naming its language and a copy button (components/Markdown.tsx handles the click).
md.renderer.rules.fence = (tokens, idx) => {
  const token = tokens[idx];
  const language = (token.info || "").trim().split(/\s+/)[0].toLowerCase();
  const known = Boolean(language && hljs.getLanguage(language));
  const label = escapeHtml(language || "text");
  return (
    `<div class="code-block"><div class="code-head"><span class="code-lang">${label}</span>` +
    `<button type="button" class="copy-button copy-code" aria-label="Copy code">Copy</button></div>` +
    `<pre><code class="hljs${known ? ` language-${escapeHtml(language)}` : ""}">${highlight(token.content, language)}` +
    `</code></pre></div>\n`
  );
};

// Wide tables scroll inside their own box instead of widening the page.
md.renderer.rules.table_open = () => '<div class="table-scroll"><table>\n';
md.renderer.rules.table_close = () => "</table></div>\n";

export function renderMarkdown(text: string): string {
  return md.render(text);
}
