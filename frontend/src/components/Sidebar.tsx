import type { MouseEvent } from "react";

import type { ThreadSummary } from "../api";
import { relativeTime } from "../lib/format";
import { urlForThread } from "../lib/url";

interface Props {
  id: string;
  pagePath: string;
  threads: readonly ThreadSummary[];
  loaded: boolean;
  error: string | null;
  currentId: string | null;
  onOpen: (threadId: string | null) => void;
  onDelete: (thread: ThreadSummary) => void;
  /** Closes the drawer (narrow screens only; the button is hidden on wide ones). */
  onClose: () => void;
}

function isPlainClick(event: MouseEvent) {
  return event.button === 0 && !event.metaKey && !event.ctrlKey && !event.shiftKey && !event.altKey;
}

/** The caller's conversations, newest first, with the open one marked as the current page. */
export function Sidebar({ id, pagePath, threads, loaded, error, currentId, onOpen, onDelete, onClose }: Props) {
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
      {error ? <p className="sidebar-error" role="alert">{error}</p> : null}
      {loaded && !error && threads.length === 0 ? <p className="muted sidebar-empty">No conversations yet.</p> : null}
      <ul className="thread-list">
        {threads.map((thread) => {
          const current = thread.id === currentId;
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
              <button
                type="button"
                className="thread-delete"
                aria-label={`Delete conversation: ${thread.title}`}
                title="Delete conversation"
                onClick={() => onDelete(thread)}
              >
                <span aria-hidden="true">×</span>
              </button>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
