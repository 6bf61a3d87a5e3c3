import { useCallback, useEffect, useId, useRef, useState } from "react";

import { readConfig } from "../config";
import { relativeTime } from "../lib/format";
import { deleteMemory, listMemories, type MemoryEntry } from "../memoryApi";

interface Props {
  open: boolean;
  onClose: () => void;
}

/**
 * What the agent remembers about the caller across conversations (its /memories/ files), in a modal dialog:
 * read anew each time it opens; each entry can be deleted, and the agent no longer finds it in any conversation.
 */
export function MemoryPanel({ open, onClose }: Props) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [entries, setEntries] = useState<MemoryEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const apiUrl = readConfig().apiUrl;

  const load = useCallback(async () => {
    setEntries(null);
    setError(null);
    try {
      setEntries(await listMemories(apiUrl));
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : "Could not load what the agent remembers.");
      setEntries([]);
    }
  }, [apiUrl]);

  useEffect(() => {
    const node = dialog.current;
    if (!node) return;
    if (open && !node.open) {
      node.showModal();
      void load();
    }
    if (!open && node.open) node.close();
  }, [open, load]);

  async function forget(entry: MemoryEntry) {
    setDeleting(entry.name);
    setError(null);
    try {
      await deleteMemory(apiUrl, entry.name);
      setEntries((found) => (found ?? []).filter((e) => e.name !== entry.name));
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : "Could not delete the memory.");
    } finally {
      setDeleting(null);
    }
  }

  return (
    <dialog
      ref={dialog}
      className="dialog memory-panel"
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <div className="memory-head">
        <h2 id={titleId}>Memory</h2>
        <button type="button" className="button" onClick={onClose}>Close</button>
      </div>
      <p className="muted memory-intro">
        What the agent remembers about you in every conversation. Delete an entry to make it forget.
      </p>
      {error ? <p className="sidebar-error" role="alert">{error}</p> : null}
      {entries === null ? <p className="muted" role="status">Loading…</p> : null}
      {entries !== null && entries.length === 0 && !error ? (
        <p className="muted memory-empty" role="status">
          Nothing remembered yet. Say “remember that …” in a conversation and it appears here.
        </p>
      ) : null}
      {entries && entries.length > 0 ? (
        <ul className="memory-list" aria-label="Remembered entries">
          {entries.map((entry) => (
            <li key={entry.name} className="memory-entry" data-memory={entry.name}>
              <div className="memory-entry-text">
                <p className="memory-content">{entry.content.trim() || "(empty)"}</p>
                <p className="memory-meta">
                  <code>{entry.path}</code> · updated {relativeTime(entry.updated_at)}
                </p>
              </div>
              <button
                type="button"
                className="button button-danger memory-delete"
                aria-label={`Forget ${entry.path}`}
                disabled={deleting === entry.name}
                onClick={() => void forget(entry)}
              >
                Delete
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </dialog>
  );
}
