// Errors in plain words: what failed, the server's own explanation, and what to do about it.
import type { PageConfig } from "../config";

export interface PlainError {
  title: string;
  message: string;
  /** Set when signing in would help. */
  loginUrl?: string;
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === "number") return status;
  const match = /Protocol request failed: (\d{3})/.exec(String((error as Error | null)?.message ?? ""));
  return match ? Number(match[1]) : undefined;
}

function loginUrl(config: PageConfig): string {
  const next = `${window.location.pathname}${window.location.search}`;
  return `${config.loginUrl}?next=${encodeURIComponent(next)}`;
}

export function describeError(error: unknown, config: PageConfig, title = "The agent run failed"): PlainError {
  const raw = error instanceof Error ? error.message : String(error ?? "");
  // "Protocol request failed: 404 Not Found — Thread x not found" → the server's sentence after the dash.
  const detail = raw.includes(" — ") ? raw.slice(raw.indexOf(" — ") + 3) : raw;
  const status = statusOf(error);
  if (status === 401) {
    return { title: "You are not signed in", message: "Log in to use the chat.", loginUrl: loginUrl(config) };
  }
  if (status === 403) return { title: "Not allowed", message: detail || "This request was refused." };
  if (status === 404) return { title: "Conversation not found", message: detail };
  if (status === 429) return { title: "Too many open conversations", message: detail };
  if (error instanceof TypeError || /Failed to fetch|NetworkError|network/i.test(raw)) {
    return { title: "Could not reach the server", message: "Check your connection and try again." };
  }
  if (status !== undefined) return { title: "The server refused the request", message: detail || raw };
  // The server answered a command (e.g. run.start) with a protocol error: the run never started.
  if ((error as { name?: string } | null)?.name === "ProtocolError") {
    const code = (error as { code?: string }).code;
    if (code === "permission_denied") return { title: "Not allowed", message: detail };
    return { title: "The agent could not start", message: detail || raw };
  }
  return { title, message: detail || "The run ended with an error but gave no details." };
}
