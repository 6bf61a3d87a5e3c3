// Status words, not colour alone: every badge says what it means.

export type Status = "pending" | "running" | "complete" | "error" | "stopped" | "waiting";

const LABELS: Record<Status, string> = {
  pending: "Starting",
  running: "Running",
  complete: "Complete",
  error: "Error",
  stopped: "Stopped",
  waiting: "Waiting for approval",
};

export function StatusBadge({ status }: { status: Status }) {
  return (
    <span className={`badge badge-${status}`} data-status={status}>
      {status === "running" || status === "pending" ? <span className="spinner" aria-hidden="true" /> : null}
      {LABELS[status]}
    </span>
  );
}
