// Approvals (human in the loop): what the server says a thread asked and how it was answered
// (GET /api/threads/:id/approvals, chat/thread_approvals.py), and the answers the page sends with input.respond.

export type DecisionType = "approve" | "edit" | "reject" | "respond";

export interface Decision {
  type: DecisionType;
  /** reject: the reason the agent sees; respond: the answer that stands in for the tool's result. */
  message?: string;
  /** edit: the same tool with new arguments. */
  edited_action?: { name: string; args: Record<string, unknown> };
}

export interface ActionRequest {
  name: string;
  args: Record<string, unknown>;
  description?: string;
  /** The decisions this call may get (LangChain's HumanInTheLoopMiddleware review config). */
  allowed: DecisionType[];
}

export interface Approval {
  interruptId: string;
  /** Where it was asked: [] for the coordinator, a subagent's namespace for its own calls. */
  namespace: string[];
  /** The coordinator's `task` call whose subagent asked (null for the coordinator's own calls). */
  taskCallId: string | null;
  actions: ActionRequest[];
  status: "pending" | "answered";
  /** The answer, once given: one decision per action. */
  decisions: Decision[] | null;
}

const KNOWN: DecisionType[] = ["approve", "edit", "reject", "respond"];

function record(value: unknown): Record<string, unknown> {
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function actionsOf(request: unknown): ActionRequest[] {
  const body = record(request);
  const actions = Array.isArray(body.action_requests) ? body.action_requests : [];
  const configs = Array.isArray(body.review_configs) ? body.review_configs.map(record) : [];
  return actions.map((raw, index) => {
    const action = record(raw);
    const name = String(action.name ?? "tool");
    // One review config per action, in order; otherwise the one naming this tool.
    const config = configs[index]?.action_name === name ? configs[index]
      : configs.find((c) => c.action_name === name) ?? {};
    const allowed = Array.isArray(config.allowed_decisions) ? config.allowed_decisions : [];
    return {
      name,
      args: record(action.args),
      description: typeof action.description === "string" ? action.description : undefined,
      allowed: KNOWN.filter((kind) => allowed.includes(kind)),
    };
  });
}

function approvalOf(raw: unknown): Approval {
  const item = record(raw);
  const response = record(item.response);
  return {
    interruptId: String(item.interrupt_id),
    namespace: Array.isArray(item.namespace) ? item.namespace.map(String) : [],
    taskCallId: typeof item.task_call_id === "string" ? item.task_call_id : null,
    actions: actionsOf(item.request),
    status: item.status === "answered" ? "answered" : "pending",
    decisions: Array.isArray(response.decisions) ? (response.decisions as Decision[]) : null,
  };
}

export async function getApprovals(apiUrl: string, threadId: string): Promise<Approval[]> {
  const response = await fetch(`${apiUrl}/threads/${encodeURIComponent(threadId)}/approvals`, {
    cache: "no-store",
    credentials: "same-origin",
  });
  // A thread nobody has written to yet has nothing to approve.
  if (response.status === 404) return [];
  if (!response.ok) throw new Error(`Could not load the approvals (HTTP ${response.status}).`);
  const body = record(await response.json());
  return Array.isArray(body.approvals) ? body.approvals.map(approvalOf) : [];
}

/** Arguments typed as JSON: the object, or why it cannot be sent. */
export function parseArgs(text: string): { args: Record<string, unknown> } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { error: `This is not valid JSON (${reason}). Fix it, or cancel the edit. Nothing was sent.` };
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    return { error: 'The arguments must be a JSON object, like {"expression": "6 * 7"}. Nothing was sent.' };
  }
  return { args: value as Record<string, unknown> };
}

/** What a decision did, in plain words. */
export function describeDecision(decision: Decision): string {
  switch (decision.type) {
    case "approve":
      return "Approved: the tool ran as asked.";
    case "edit":
      return "Edited: the tool ran with new arguments.";
    case "reject":
      return decision.message ? `Rejected: “${decision.message}”` : "Rejected.";
    case "respond":
      return `Answered instead of the tool: “${decision.message ?? ""}”`;
    default:
      return "Answered.";
  }
}

export const DECISION_LABELS: Record<DecisionType, string> = {
  approve: "Approved",
  edit: "Edited",
  reject: "Rejected",
  respond: "Responded",
};

/** An input.respond failure, in plain words (the server's protocol error codes). */
export function describeRespondError(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error ?? "");
  if (code === "no_such_interrupt") {
    return "This approval was already answered, in another tab or window, or it is no longer pending. Your answer " +
      "was not applied, and nothing ran twice.";
  }
  if (code === "invalid_argument") return `The server refused this answer: ${message}`;
  if (error instanceof TypeError || /Failed to fetch|NetworkError/i.test(message)) {
    return "Could not reach the server. Check your connection and try again.";
  }
  return `Could not send the answer: ${message || "the server refused it."}`;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Whether a tool call is the one an approval asks about (an edited call carries the new arguments). */
export function asksAbout(approval: Approval, call: { name: string; args: unknown }): boolean {
  const args = canonical(call.args ?? {});
  return approval.actions.some((action, index) => {
    if (action.name !== call.name) return false;
    const edited = approval.decisions?.[index]?.edited_action?.args;
    return canonical(action.args) === args || (edited !== undefined && canonical(edited) === args);
  });
}

export function pendingActions(approvals: readonly Approval[]): number {
  return approvals.filter((a) => a.status === "pending").reduce((sum, a) => sum + a.actions.length, 0);
}
