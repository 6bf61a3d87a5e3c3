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
    // The protocol's routes answer {error, message}; the Agent Server API's (rename, delete) answer {detail}.
    const body = (await response.json()) as { message?: string; error?: string; detail?: unknown };
    detail = body.message ?? body.error ?? (typeof body.detail === "string" ? body.detail : "");
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

/** The caller's threads whose title contains `query` (all of them when it is blank). */
export async function searchThreads(apiUrl: string, query: string): Promise<ThreadSummary[]> {
  if (!query.trim()) return listThreads(apiUrl);
  const response = await fetch(`${apiUrl}/threads?q=${encodeURIComponent(query.trim())}`, {
    cache: "no-store",
    credentials: "same-origin",
  });
  if (!response.ok) throw await failure(response, "Could not search your conversations");
  const body = (await response.json()) as unknown;
  return Array.isArray(body) ? (body as ThreadSummary[]) : [];
}

export async function renameThread(
  apiUrl: string,
  threadId: string,
  title: string,
): Promise<Pick<ThreadSummary, "id" | "title">> {
  const response = await fetch(`${apiUrl}/threads/${encodeURIComponent(threadId)}`, {
    method: "PATCH",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ title }),
  });
  if (!response.ok) throw await failure(response, "Could not rename the conversation");
  // The answer is the Agent Server's thread object, which has no title: the server stored this one with its
  // whitespace collapsed (chat.services.validate_title), so the page shows it the same way.
  return { id: threadId, title: title.split(/\s+/).filter(Boolean).join(" ") };
}

// ---- Branches (chat/branches.py on the server) -------------------------------------------------------------------

export interface BranchMessage {
  id: string;
  type: string;
  /** For a user message: the checkpoint to fork from to send an edited version of it. */
  edit_from?: string;
  /** For an answer: the checkpoint to fork from to answer its user message anew. */
  regenerate_from?: string;
}

export interface Fork {
  checkpoint_id: string;
  /** The position, in the branch's messages, of the first message that differs between the alternatives. */
  message_index: number;
  /** Which alternative the branch takes (0-based). */
  current: number;
  /** The newest checkpoint of each alternative, oldest alternative first. */
  heads: string[];
}

export interface BranchMap {
  checkpoint_id: string;
  latest: string;
  messages: BranchMessage[];
  forks: Fork[];
}

const threadUrl = (apiUrl: string, threadId: string) => `${apiUrl}/threads/${encodeURIComponent(threadId)}`;

export async function getBranches(apiUrl: string, threadId: string, head?: string | null): Promise<BranchMap | null> {
  const query = head ? `?checkpoint_id=${encodeURIComponent(head)}` : "";
  const response = await fetch(`${threadUrl(apiUrl, threadId)}/branches${query}`, {
    cache: "no-store",
    credentials: "same-origin",
  });
  if (response.status === 404) return null;
  if (!response.ok) throw await failure(response, "Could not load the conversation's branches");
  return (await response.json()) as BranchMap;
}

/** The messages of the thread at one checkpoint (the head of a branch that is not the newest). */
export async function messagesAt(apiUrl: string, threadId: string, checkpointId: string): Promise<unknown[]> {
  const response = await fetch(`${threadUrl(apiUrl, threadId)}/history`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ limit: 1, checkpoint: { checkpoint_id: checkpointId } }),
  });
  if (!response.ok) throw await failure(response, "Could not load that branch");
  const states = (await response.json()) as { values?: { messages?: unknown[] } }[];
  return states[0]?.values?.messages ?? [];
}

let commandId = 1_000_000;

/**
 * Start a run from an earlier checkpoint (`run.start` with `config.configurable.checkpoint_id`), which forks the
 * thread; resolves with the run's id once the run has written its first checkpoint, so that a client hydrating the
 * thread afterwards sees the new branch and the run in progress.
 */
export async function startFork(apiUrl: string, threadId: string, checkpointId: string,
                                input: Record<string, unknown> | null,
                                configurable: Record<string, unknown> = {}): Promise<string> {
  const response = await fetch(`${threadUrl(apiUrl, threadId)}/commands`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      id: ++commandId,
      method: "run.start",
      params: { assistant_id: "agent", input, config: { configurable: { ...configurable, checkpoint_id: checkpointId } } },
    }),
  });
  if (!response.ok) throw await failure(response, "Could not start the run");
  const body = (await response.json()) as { type: string; result?: { run_id?: string }; message?: string };
  if (body.type !== "success" || !body.result?.run_id) {
    throw new ApiError(200, `Could not start the run: ${body.message ?? "the server refused it"}`);
  }
  const runId = body.result.run_id;
  for (let attempt = 0; attempt < 100; attempt++) {
    const state = await fetch(`${threadUrl(apiUrl, threadId)}/state`, { cache: "no-store", credentials: "same-origin" });
    if (state.ok) {
      const found = (await state.json()) as { metadata?: { run_id?: string } };
      if (found.metadata?.run_id === runId) break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return runId;
}
