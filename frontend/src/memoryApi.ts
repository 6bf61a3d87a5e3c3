// The chat app's memory API (chat/api_memories.py): what the deep agent remembers for the caller, across threads.

import { ApiError } from "./api";

export interface MemoryEntry {
  /** The file's path below /memories/, e.g. "favourite-number.md". */
  name: string;
  /** The path the agent's file tools use, e.g. "/memories/favourite-number.md". */
  path: string;
  content: string;
  created_at: string;
  updated_at: string;
}

async function failure(response: Response, what: string): Promise<ApiError> {
  let detail = "";
  try {
    const body = (await response.json()) as { detail?: unknown };
    detail = typeof body.detail === "string" ? body.detail : "";
  } catch {
    // Not JSON: the status says enough.
  }
  return new ApiError(response.status, detail ? `${what}: ${detail}` : `${what} (HTTP ${response.status}).`);
}

export async function listMemories(apiUrl: string): Promise<MemoryEntry[]> {
  const response = await fetch(`${apiUrl}/chat/memories`, { cache: "no-store", credentials: "same-origin" });
  if (!response.ok) throw await failure(response, "Could not load what the agent remembers");
  const body = (await response.json()) as { entries?: MemoryEntry[] };
  return body.entries ?? [];
}

/** Forget one entry; one that is already gone counts as forgotten. */
export async function deleteMemory(apiUrl: string, name: string): Promise<void> {
  const path = name.split("/").map(encodeURIComponent).join("/");
  const response = await fetch(`${apiUrl}/chat/memories/${path}`, { method: "DELETE", credentials: "same-origin" });
  if (!response.ok && response.status !== 404) throw await failure(response, "Could not delete the memory");
}
