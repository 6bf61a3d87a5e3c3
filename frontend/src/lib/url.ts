// The open thread lives in the URL (?thread=<id>), so a reload or a shared link opens it.

export function threadIdFromUrl(): string | null {
  const id = new URLSearchParams(window.location.search).get("thread");
  return id && id.trim() ? id.trim() : null;
}

export function urlForThread(pagePath: string, threadId: string | null): string {
  return threadId ? `${pagePath}?thread=${encodeURIComponent(threadId)}` : pagePath;
}
