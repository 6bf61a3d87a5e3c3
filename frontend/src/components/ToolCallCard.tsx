import { prettyJson } from "../lib/format";
import { type Status, StatusBadge } from "./Status";

export interface ToolCallView {
  id: string;
  name: string;
  args: unknown;
  status: Status;
  result?: unknown;
  error?: string;
}

/** One tool call: its name, arguments, status and result (or error). */
export function ToolCallCard({ call }: { call: ToolCallView }) {
  const hasResult = call.result !== undefined && call.result !== null && call.result !== "";
  return (
    <section className="tool-call" data-tool={call.name} data-status={call.status} aria-label={`Tool call ${call.name}`}>
      <header className="tool-call-head">
        <span className="tool-label">Tool</span>
        <code className="tool-name">{call.name}</code>
        <StatusBadge status={call.status} />
      </header>
      <div className="tool-call-body">
        <div className="tool-part">
          <span className="tool-part-label">Arguments</span>
          <pre className="tool-args">{prettyJson(call.args) || "{}"}</pre>
        </div>
        {call.error ? (
          <div className="tool-part">
            <span className="tool-part-label">Error</span>
            <pre className="tool-error">{call.error}</pre>
          </div>
        ) : null}
        {hasResult ? (
          <div className="tool-part">
            <span className="tool-part-label">Result</span>
            <pre className="tool-result">{prettyJson(call.result)}</pre>
          </div>
        ) : null}
      </div>
    </section>
  );
}
