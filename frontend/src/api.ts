// The two sidebar calls of the chat API that the streaming client does not cover (agent-streaming-protocol.md §8.3).

export interface ThreadSummary {
  id: string;
  title: string;
  updatedAt: string | null;
}

export class ApiError extends Error {
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

async function failure(response: Response, what: string): Promise<ApiError> {
  let detail = "";
  try {
    const body = (await response.json()) as { message?: string; error?: string };
    detail = body.message ?? body.error ?? "";
  } catch {
    // Not JSON: the status says enough.
  }
  return new ApiError(response.status, detail ? `${what}: ${detail}` : `${what} (HTTP ${response.status}).`);
}

/** The caller's threads, newest first; never served from a cache. */
export async function listThreads(apiUrl: string): Promise<ThreadSummary[]> {
  const response = await fetch(`${apiUrl}/threads`, { cache: "no-store", credentials: "same-origin" });
  if (!response.ok) throw await failure(response, "Could not load your conversations");
  const body = (await response.json()) as unknown;
  return Array.isArray(body) ? (body as ThreadSummary[]) : [];
}

export async function deleteThread(apiUrl: string, threadId: string): Promise<void> {
  const response = await fetch(`${apiUrl}/threads/${encodeURIComponent(threadId)}`, {
    method: "DELETE",
    credentials: "same-origin",
  });
  if (!response.ok && response.status !== 404) throw await failure(response, "Could not delete the conversation");
}
