import type { AnyStream, SubagentDiscoverySnapshot } from "@langchain/react";
import { useMessages, useToolCalls } from "@langchain/react";
import { type ReactNode, useId, useState } from "react";

import { MessageList } from "./MessageList";
import { type Status, StatusBadge } from "./Status";

export interface SubagentView {
  id: string;
  name: string;
  taskInput: string | undefined;
  status: Status;
  /** The discovery snapshot from the streaming client, once it knows the subagent. */
  snapshot?: SubagentDiscoverySnapshot;
  result?: string;
}


function SubagentDetail({ stream, snapshot, taskInput }: { stream: AnyStream; snapshot: SubagentDiscoverySnapshot;
                                                             taskInput: string | undefined }) {
  // Mounting these subscribes to the subagent's own namespace; unmounting (collapsing) unsubscribes.
  const messages = useMessages(stream, snapshot);
  const toolCalls = useToolCalls(stream, snapshot);
  const active = snapshot.status === "running";
  if (messages.length === 0) {
    return <p className="muted">{active ? "Waiting for the subagent's first output…" : "No messages recorded."}</p>;
  }
  return <MessageList messages={messages} toolCalls={toolCalls} active={active} skipHumanText={taskInput} />;
}

/** A subagent's card: its name, task and status; expanding it streams the subagent's own messages and tool calls. */
export function SubagentCard({ stream, subagent, children }: { stream: AnyStream; subagent: SubagentView;
                                                                children?: ReactNode }) {
  const [expanded, setExpanded] = useState(false);
  const detailId = useId();
  return (
    <section className="subagent" data-subagent={subagent.name} data-status={subagent.status}
             aria-label={`Subagent ${subagent.name}`}>
      <header className="subagent-head">
        <button type="button" className="subagent-toggle" aria-expanded={expanded} aria-controls={detailId}
                onClick={() => setExpanded(!expanded)} disabled={!subagent.snapshot}>
          <span className="chevron" aria-hidden="true" />
          <span className="subagent-name">{subagent.name}</span>
          <span className="visually-hidden">{expanded ? " (hide details)" : " (show details)"}</span>
        </button>
        <StatusBadge status={subagent.status} />
      </header>
      {subagent.taskInput ? (
        <p className="subagent-task"><span className="subagent-task-label">Task:</span> {subagent.taskInput}</p>
      ) : null}
      {subagent.result && !expanded ? <p className="subagent-result">{subagent.result}</p> : null}
      {/* The subagent's own approvals, shown whether or not its details are. */}
      {children}
      <div id={detailId} className="subagent-detail" hidden={!expanded}>
        {expanded && subagent.snapshot ? (
          <SubagentDetail stream={stream} snapshot={subagent.snapshot} taskInput={subagent.taskInput} />
        ) : null}
      </div>
    </section>
  );
}
