import { useCallback, useEffect, useRef, useState } from "react";

import { ApiError, deleteThread, renameThread, searchThreads, type ThreadSummary } from "./api";
import { Chat } from "./components/Chat";
import { ConfirmDialog } from "./components/ConfirmDialog";
import { Sidebar } from "./components/Sidebar";
import type { PageConfig } from "./config";
import { threadIdFromUrl, urlForThread } from "./lib/url";

interface Mounted {
  /** Changes on every navigation, so the chat reconnects from scratch. */
  key: number;
  threadId: string | null;
}

export function App({ config }: { config: PageConfig }) {
  const [mounted, setMounted] = useState<Mounted>(() => ({ key: 0, threadId: threadIdFromUrl() }));
  // Differs from mounted.threadId once a new conversation got its id on the first send.
  const [currentId, setCurrentId] = useState<string | null>(mounted.threadId);
  const [threads, setThreads] = useState<ThreadSummary[]>([]);
  const [threadsLoaded, setThreadsLoaded] = useState(false);
  const [threadsError, setThreadsError] = useState<string | null>(null);
  const [needsLogin, setNeedsLogin] = useState(false);
  const [sidebarOpen, setSidebarOpen] = useState(false);
  const [pendingDelete, setPendingDelete] = useState<ThreadSummary | null>(null);
  const [query, setQuery] = useState("");
  const queryRef = useRef("");
  const refreshSeq = useRef(0);
  const sidebarToggle = useRef<HTMLButtonElement>(null);

  const refreshThreads = useCallback(async () => {
    const seq = ++refreshSeq.current;
    try {
      const found = await searchThreads(config.apiUrl, queryRef.current);
      if (seq !== refreshSeq.current) return;
      setThreads(found);
      setThreadsError(null);
      setNeedsLogin(false);
    } catch (error) {
      if (seq !== refreshSeq.current) return;
      setNeedsLogin(error instanceof ApiError && error.status === 401);
      setThreadsError(error instanceof Error ? error.message : "Could not load your conversations.");
    } finally {
      if (seq === refreshSeq.current) setThreadsLoaded(true);
    }
  }, [config.apiUrl]);

  useEffect(() => {
    void refreshThreads();
  }, [refreshThreads]);

  // The search runs on the server (it also finds threads beyond the list's first page), a moment after typing.
  useEffect(() => {
    queryRef.current = query;
    const timer = window.setTimeout(() => void refreshThreads(), 200);
    return () => window.clearTimeout(timer);
  }, [query, refreshThreads]);

  const rename = useCallback(
    async (thread: ThreadSummary, title: string) => {
      try {
        const renamed = await renameThread(config.apiUrl, thread.id, title);
        setThreads((found) => found.map((t) => (t.id === renamed.id ? { ...t, title: renamed.title } : t)));
        setThreadsError(null);
        return true;
      } catch (error) {
        setThreadsError(error instanceof Error ? error.message : "Could not rename the conversation.");
        return false;
      }
    },
    [config.apiUrl],
  );

  const open = useCallback(
    (threadId: string | null, { push = true } = {}) => {
      if (push) window.history.pushState(null, "", urlForThread(config.pagePath, threadId));
      setMounted((previous) => ({ key: previous.key + 1, threadId }));
      setCurrentId(threadId);
      setSidebarOpen(false);
      void refreshThreads();
    },
    [config.pagePath, refreshThreads],
  );

  useEffect(() => {
    const onPop = () => open(threadIdFromUrl(), { push: false });
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, [open]);

  const onThreadCreated = useCallback(
    (threadId: string) => {
      window.history.replaceState(null, "", urlForThread(config.pagePath, threadId));
      setCurrentId(threadId);
    },
    [config.pagePath],
  );

  async function confirmDelete() {
    const thread = pendingDelete;
    setPendingDelete(null);
    if (!thread) return;
    try {
      await deleteThread(config.apiUrl, thread.id);
      if (thread.id === currentId) open(null);
      else void refreshThreads();
    } catch (error) {
      setThreadsError(error instanceof Error ? error.message : "Could not delete the conversation.");
    }
  }

  const closeSidebar = useCallback(() => {
    setSidebarOpen(false);
    sidebarToggle.current?.focus();
  }, []);

  // The drawer (narrow screens): focus moves into it when it opens; Escape closes it.
  useEffect(() => {
    if (!sidebarOpen) return;
    document.querySelector<HTMLElement>("#thread-sidebar .new-thread")?.focus();
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape" && !document.querySelector("dialog[open]")) closeSidebar();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [sidebarOpen, closeSidebar]);

  // Not while a search filters the list: the open thread may simply not match it.
  const missing = Boolean(
    mounted.threadId && threadsLoaded && !threadsError && !query.trim() &&
      !threads.some((t) => t.id === mounted.threadId),
  );

  if (needsLogin) {
    const next = encodeURIComponent(`${window.location.pathname}${window.location.search}`);
    return (
      <div className="signin-needed" role="alert">
        <h2>Please log in</h2>
        <p>Your conversations are private to your account.</p>
        <a className="button button-primary" href={`${config.loginUrl}?next=${next}`}>Log in</a>
      </div>
    );
  }

  return (
    <div className={sidebarOpen ? "layout sidebar-open" : "layout"}>
      <div className="mobile-bar">
        <button
          ref={sidebarToggle}
          type="button"
          className="button"
          aria-controls="thread-sidebar"
          aria-expanded={sidebarOpen}
          onClick={() => setSidebarOpen(!sidebarOpen)}
        >
          Conversations
        </button>
      </div>
      <Sidebar
        id="thread-sidebar"
        pagePath={config.pagePath}
        threads={threads}
        loaded={threadsLoaded}
        error={threadsError}
        currentId={currentId}
        onOpen={(threadId) => open(threadId)}
        onDelete={setPendingDelete}
        onRename={rename}
        query={query}
        onQuery={setQuery}
        onClose={closeSidebar}
      />
      {sidebarOpen ? <div className="scrim" aria-hidden="true" onClick={closeSidebar} /> : null}
      <main className="main" id="main">
        <Chat
          key={mounted.key}
          config={config}
          threadId={mounted.threadId}
          missing={missing}
          onThreadCreated={onThreadCreated}
          onThreadsChanged={() => void refreshThreads()}
          onReload={() => open(currentId, { push: false })}
        />
      </main>
      <ConfirmDialog
        open={pendingDelete !== null}
        title="Delete this conversation?"
        message={`“${pendingDelete?.title ?? ""}” and everything in it will be deleted. This cannot be undone.`}
        confirmLabel="Delete"
        onConfirm={() => void confirmDelete()}
        onCancel={() => setPendingDelete(null)}
      />
    </div>
  );
}
