// What the Django template tells the page (templates/chat/index.html renders it with json_script).

export interface PageConfig {
  /** Absolute base URL of the chat API, e.g. "https://host/api" (the template gives a path). */
  apiUrl: string;
  /** The page's own path ("/" or "/chat/"), kept when the thread id changes in the URL. */
  pagePath: string;
  /** True when the offline scripted model answers (CHAT_MODEL unset). */
  offlineModel: boolean;
  /** Signed-in user's name, or null for the anonymous (shared) mode. */
  username: string | null;
  allowAnonymous: boolean;
  loginUrl: string;
  /** The tools the server asks about before running them (CHAT_APPROVE_TOOLS). */
  approveTools: string[];
}

export function readConfig(): PageConfig {
  const node = document.getElementById("chat-config");
  const raw = node?.textContent ? (JSON.parse(node.textContent) as Partial<PageConfig>) : {};
  return {
    apiUrl: new URL(raw.apiUrl ?? "/api", window.location.href).href.replace(/\/$/, ""),
    pagePath: raw.pagePath ?? window.location.pathname,
    offlineModel: raw.offlineModel ?? false,
    username: raw.username ?? null,
    allowAnonymous: raw.allowAnonymous ?? true,
    loginUrl: raw.loginUrl ?? "/chat/login/",
    approveTools: Array.isArray(raw.approveTools) ? raw.approveTools : [],
  };
}
