// The streaming client follows a thread's run after a page load only when the state it loads names a next step
// (`next`) or a pending interrupt; otherwise it takes the thread for finished and opens no stream. LangGraph's state
// names neither for a moment between two of a run's steps (the step's writes are saved, the next checkpoint is not
// yet), so a page that loads in that moment (a reload, or the one that follows an edit) would show a running
// conversation as stopped and never see its answer. This fetch, given to the client for its REST calls, reads such
// a state again while the thread is busy, until it names a next step or the run is over.

const STATE_PATH = /\/threads\/([^/?]+)\/state\/?(\?|$)/;
const RETRY_MS = 100;
const MAX_RETRIES = 30;

interface StateBody {
  next?: unknown;
  tasks?: { interrupts?: unknown[] }[];
}

function urlOf(input: RequestInfo | URL): string {
  return typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
}

/** What the client takes for a finished thread: `next` empty and no task waiting on an interrupt. */
function looksFinished(body: StateBody | null): boolean {
  if (!body || !Array.isArray(body.next) || body.next.length > 0) return false;
  return !(body.tasks ?? []).some((task) => Array.isArray(task?.interrupts) && task.interrupts.length > 0);
}

async function bodyOf(response: Response): Promise<StateBody | null> {
  try {
    return (await response.clone().json()) as StateBody;
  } catch {
    return null;
  }
}

async function threadBusy(stateUrl: string, init?: RequestInit): Promise<boolean> {
  const threadUrl = stateUrl.replace(/\/state\/?(?=\?|$)/, "");
  try {
    const response = await window.fetch(threadUrl, { credentials: init?.credentials, headers: init?.headers,
                                                     cache: "no-store" });
    if (!response.ok) return false;
    return ((await response.json()) as { status?: string }).status === "busy";
  } catch {
    return false;
  }
}

export const settledStateFetch: typeof fetch = async (input, init) => {
  const response = await window.fetch(input, init);
  const url = urlOf(input);
  const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
  if (!response.ok || method !== "GET" || !STATE_PATH.test(url) || !looksFinished(await bodyOf(response))) {
    return response;
  }
  let latest = response;
  for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
    // Over by now: the state read while it ran may be older than its end, so the first read stands only when the
    // thread was not busy to begin with.
    if (!(await threadBusy(url, init))) return attempt === 0 ? latest : window.fetch(input, init);
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    latest = await window.fetch(input, init);
    if (!latest.ok || !looksFinished(await bodyOf(latest))) return latest;
  }
  return latest;
};
