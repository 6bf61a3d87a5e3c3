import { type FormEvent, type KeyboardEvent, type MouseEvent, useEffect, useRef, useState } from "react";

import type { ThreadSummary } from "../api";
import { relativeTime } from "../lib/format";
import { urlForThread } from "../lib/url";
import { MemoryPanel } from "./MemoryPanel";

interface Props {
  id: string;
  pagePath: string;
  threads: readonly ThreadSummary[];
  loaded: boolean;
  error: string | null;
  currentId: string | null;
  onOpen: (threadId: string | null) => void;
  onDelete: (thread: ThreadSummary) => void;
  onRename: (thread: ThreadSummary, title: string) => Promise<boolean>;
  query: string;
  onQuery: (query: string) => void;
  /** Closes the drawer (narrow screens only; the button is hidden on wide ones). */
  onClose: () => void;
}

function isPlainClick(event: MouseEvent) {
  return event.button === 0 && !event.metaKey && !event.ctrlKey && !event.shiftKey && !event.altKey;
}

/** The caller's conversations, newest first, with the open one marked as the current page. */
function RenameForm({ thread, onDone, onRename }: {
  thread: ThreadSummary; onDone: () => void; onRename: Props["onRename"];
}) {
  const [title, setTitle] = useState(thread.title);
  const [saving, setSaving] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, []);

  async function save(event?: FormEvent) {
    event?.preventDefault();
    const cleaned = title.trim();
    if (!cleaned || cleaned === thread.title) return onDone();
    setSaving(true);
    const ok = await onRename(thread, cleaned);
    setSaving(false);
    if (ok) onDone();
  }

  function onKeyDown(event: KeyboardEvent<HTMLInputElement>) {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      onDone();
    }
  }

  return (
    <form className="thread-rename" onSubmit={save}>
      <label className="visually-hidden" htmlFor={`rename-${thread.id}`}>New title for “{thread.title}”</label>
      <input id={`rename-${thread.id}`} ref={input} value={title} maxLength={200} disabled={saving}
             onChange={(event) => setTitle(event.target.value)} onKeyDown={onKeyDown} />
      <button type="submit" className="action-button" disabled={saving || !title.trim()}>Save</button>
      <button type="button" className="action-button" onClick={onDone}>Cancel</button>
    </form>
  );
}

export function Sidebar({ id, pagePath, threads, loaded, error, currentId, onOpen, onDelete, onRename, query,
                          onQuery, onClose }: Props) {
  const [renaming, setRenaming] = useState<string | null>(null);
  const [memoryOpen, setMemoryOpen] = useState(false);
  return (
    <nav id={id} className="sidebar" aria-label="Conversations">
      <button type="button" className="sidebar-close button" onClick={onClose}>Close the list</button>
      <a
        className="button button-primary new-thread"
        href={urlForThread(pagePath, null)}
        onClick={(event) => {
          if (!isPlainClick(event)) return;
          event.preventDefault();
          onOpen(null);
        }}
      >
        New conversation
      </a>
      <div className="thread-search" role="search">
        <label className="visually-hidden" htmlFor="thread-search-input">Search conversations by title</label>
        <input id="thread-search-input" type="search" placeholder="Search conversations" value={query}
               onChange={(event) => onQuery(event.target.value)} />
      </div>
      {error ? <p className="sidebar-error" role="alert">{error}</p> : null}
      {loaded && !error && threads.length === 0 ? (
        <p className="muted sidebar-empty" role="status">
          {query.trim() ? `No conversation title contains “${query.trim()}”.` : "No conversations yet."}
        </p>
      ) : null}
      <ul className="thread-list">
        {threads.map((thread) => {
          const current = thread.id === currentId;
          if (renaming === thread.id) {
            return (
              <li key={thread.id} className={current ? "thread current" : "thread"} data-thread-id={thread.id}>
                <RenameForm thread={thread} onRename={onRename} onDone={() => setRenaming(null)} />
              </li>
            );
          }
          return (
            <li key={thread.id} className={current ? "thread current" : "thread"} data-thread-id={thread.id}>
              <a
                className="thread-link"
                href={urlForThread(pagePath, thread.id)}
                aria-current={current ? "page" : undefined}
                onClick={(event) => {
                  if (!isPlainClick(event)) return;
                  event.preventDefault();
                  onOpen(thread.id);
                }}
              >
                <span className="thread-title">{thread.title}</span>
                <span className="thread-time">{relativeTime(thread.updatedAt)}</span>
              </a>
              <div className="thread-actions">
              <button
                type="button"
                className="thread-action thread-rename-button"
                aria-label={`Rename conversation: ${thread.title}`}
                title="Rename conversation"
                onClick={() => setRenaming(thread.id)}
              >
                <span aria-hidden="true">✎</span>
              </button>
              <button
                type="button"
                className="thread-action thread-delete"
                aria-label={`Delete conversation: ${thread.title}`}
                title="Delete conversation"
                onClick={() => onDelete(thread)}
              >
                <span aria-hidden="true">×</span>
              </button>
              </div>
            </li>
          );
        })}
      </ul>
      <button type="button" className="button memory-open" aria-haspopup="dialog"
              onClick={() => setMemoryOpen(true)}>
        Memory
      </button>
      <MemoryPanel open={memoryOpen} onClose={() => setMemoryOpen(false)} />
    </nav>
  );
}
