"""A scripted OpenAI-compatible server on loopback, so the agent's real provider path (`CHAT_MODEL=openai:<name>`,
langchain-openai and the openai SDK over HTTP) runs without a paid key.

It answers `POST /v1/responses` (the coordinator: Responses API with reasoning summaries, chat/agent/language_models.py)
and `POST /v1/chat/completions` (the subagents), streamed as the API streams them (or whole with `stream: false`):

- chat completions: a role delta, content deltas, each tool call as its index, id and name and then its arguments in
  fragments, a `finish_reason` chunk, a usage chunk when `stream_options.include_usage`, then `data: [DONE]`;
- responses: `response.created`, a reasoning item with its summary streamed as `reasoning_summary_text.delta`s,
  message items as `output_text.delta`s, function calls as `output_item.added` then `function_call_arguments.delta`s,
  each item's `done` events, and `response.completed` carrying the whole response and its usage.

Replies are decided from the conversation in the request alone (`Script`), worded as the offline scripted model's
(so the same client scripts check both): the coordinator (offered `task`) delegates arithmetic to math-whiz and
lookups to the researcher, then reports the tool results it was sent; a subagent (offered `calculator` or
`search_web`) calls its tool, then reports its result (`6 * 7 = 42`, with the arguments an edit ran it with), and
after a rejection says what it will do instead. Every request is recorded (`requests`), so a test reads what the
model was sent.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "gpt-5.4-mini"
REJECTED = "User rejected the tool call"
FRAGMENT = 7  # characters per streamed fragment of text or arguments
_EXPRESSION = re.compile(r"\d+(?:\.\d+)?(?:\s*[-+*/]\s*\d+(?:\.\d+)?)+")
_RESEARCH = re.compile(r"research\s+([^,.;]+)", re.IGNORECASE)
# How LangChain's HumanInTheLoopMiddleware words a rejection's reason and an edited call's result.
_REASON = re.compile(r"with reason: (.*)\Z", re.DOTALL)
_EXECUTED = re.compile(r"Executed instead: \S+ with arguments ")
_RESPONSE = "Tool response:"


@dataclass
class ToolCall:
    id: str
    name: str
    args: dict[str, Any]


@dataclass
class Reply:
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class Message:
    """One message of a request, whichever API sent it."""

    role: str
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str = ""


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    messages: list[Message]
    tools: list[str]


def pieces(text: str, size: int = FRAGMENT) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def text_of(content: Any) -> str:
    """The text of a message's content: a string or a list of parts (`text`, `input_text`, `output_text`)."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


# --- reading requests

def chat_messages(body: dict) -> list[Message]:
    messages = []
    for raw in body.get("messages", []):
        calls = [ToolCall(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
                 for c in raw.get("tool_calls") or []]
        messages.append(Message(raw["role"], text_of(raw.get("content")), calls, raw.get("tool_call_id", "")))
    return messages


def responses_messages(body: dict) -> list[Message]:
    messages: list[Message] = [Message("system", body["instructions"])] if body.get("instructions") else []
    items = body.get("input")
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items or []:
        kind = item.get("type", "message")
        if kind == "function_call":
            call = ToolCall(item["call_id"], item["name"], json.loads(item["arguments"] or "{}"))
            if messages and messages[-1].role == "assistant" and not messages[-1].content:
                messages[-1].tool_calls.append(call)
            else:
                messages.append(Message("assistant", tool_calls=[call]))
        elif kind == "function_call_output":
            messages.append(Message("tool", text_of(item["output"]), tool_call_id=item["call_id"]))
        elif kind == "message":
            messages.append(Message(item["role"], text_of(item.get("content"))))
    return messages


def conversation_problem(messages: list[Message]) -> str | None:
    """What OpenAI refuses with a 400 in a conversation: a tool result answering no earlier call, or a call left
    without its result when the conversation goes on (as a rejected or edited call would be if it were lost)."""
    waiting: set[str] = set()
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id not in waiting:
                return f"No tool call found for function call output with call_id {message.tool_call_id}."
            waiting.discard(message.tool_call_id)
        elif waiting:
            return f"Tool calls {sorted(waiting)} have no output before the next message."
        waiting |= {call.id for call in message.tool_calls}
    return None


def tool_names(body: dict) -> list[str]:
    return [tool.get("name") or tool.get("function", {}).get("name", "") for tool in body.get("tools") or []]


# --- the script

class Script:
    """What the model answers, from the conversation alone (parallel subagents cannot confuse it)."""

    def __init__(self):
        self._ids = itertools.count(1)

    def call(self, name: str, args: dict) -> ToolCall:
        return ToolCall(f"call_{next(self._ids):04d}{time.time_ns() % 10**8:08d}", name, args)

    def reply(self, messages: list[Message], tools: list[str]) -> Reply:
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        results = [m for m in messages[last_user + 1:] if m.role == "tool"]
        request = messages[last_user].content if last_user >= 0 else ""
        if "task" in tools:
            return self.coordinator(request, results)
        if "calculator" in tools:
            return self.worker("calculator", {"expression": self.expression(request)}, results)
        if "search_web" in tools:
            found = _RESEARCH.search(request)
            return self.worker("search_web", {"query": (found.group(1) if found else request).strip()}, results)
        return Reply(text="I have no tools for this.")

    @staticmethod
    def expression(text: str) -> str:
        found = _EXPRESSION.search(text)
        return found.group(0) if found else text

    def coordinator(self, request: str, results: list[Message]) -> Reply:
        if not results:
            calls = []
            found = _RESEARCH.search(request)
            if found:
                calls.append(self.call("task", {"description": f"Research {found.group(1).strip()}",
                                                "subagent_type": "researcher"}))
            if _EXPRESSION.search(request):
                calls.append(self.call("task", {"description": f"Calculate {self.expression(request)}",
                                                "subagent_type": "math-whiz"}))
            if not calls:
                return Reply(text="I can only delegate lookups and arithmetic.", reasoning="Nothing to delegate.")
            whom = " and ".join(c.args["subagent_type"] for c in calls)
            return Reply(reasoning=f"**Delegating** I will ask {whom}.", tool_calls=calls)
        parts = [f"I did not delegate: {rejection(r.content)}. Instead I will answer without a subagent."
                 if r.content.startswith(REJECTED) else executed_call(r.content)[1] for r in results]
        return Reply(text=" ".join(parts), reasoning="**Summarising** The subagents answered.")

    def worker(self, tool: str, args: dict, results: list[Message]) -> Reply:
        if not results:
            return Reply(tool_calls=[self.call(tool, args)])
        content = results[-1].content
        if content.startswith(REJECTED):
            return Reply(text=f"I did not run {tool}: {rejection(content)}. Instead I will answer without it.")
        executed, result = executed_call(content)
        if tool == "calculator":
            return Reply(text=f"{executed.get('expression', args['expression'])} = {result}")
        return Reply(text=f"Search results for {executed.get('query', args['query'])}: {result}")


def rejection(content: str) -> str:
    """How a reply names a rejection: `you rejected the call (<reason>)`, as the offline model does."""
    found = _REASON.search(content)
    return f"you rejected the call ({found.group(1).strip()})" if found else "you rejected the call"


def executed_call(content: str) -> tuple[dict, str]:
    """The arguments a tool ran with when a person edited them (LangChain's notice before the result), and its
    result: ({}, content) for a call that ran as the model made it."""
    found = _EXECUTED.search(content)
    if found is None:
        return {}, content
    args, end = json.JSONDecoder().raw_decode(content, found.end())
    rest = content[end:]
    return args, rest[rest.find(_RESPONSE) + len(_RESPONSE):].strip() if _RESPONSE in rest else ""


# --- writing replies

def chat_completion_chunks(reply: Reply, body: dict) -> Iterator[dict]:
    """The chunks of a streamed chat completion, as OpenAI sends them."""
    base = {"id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model", MODEL), "system_fingerprint": "fp_scripted"}
    usage_requested = bool((body.get("stream_options") or {}).get("include_usage"))
    extra = {"usage": None} if usage_requested else {}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], **extra}

    yield chunk({"role": "assistant", "content": "" if reply.text else None, "refusal": None})
    if reply.text:
        for piece in pieces(reply.text):
            yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        yield chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                     "function": {"name": call.name, "arguments": ""}}]})
        for piece in pieces(json.dumps(call.args)):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    if usage_requested:
        yield {**base, "choices": [], "usage": usage(reply, chat=True)}


def chat_completion(reply: Reply, body: dict) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": json.dumps(c.args)}}
                                 for c in reply.tool_calls]
    return {"id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", MODEL), "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
            "usage": usage(reply, chat=True)}


def usage(reply: Reply, *, chat: bool) -> dict:
    output = len(reply.text.split()) + len(reply.reasoning.split()) + 5 * len(reply.tool_calls) + 1
    if chat:
        return {"prompt_tokens": 50, "completion_tokens": output, "total_tokens": 50 + output}
    return {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": len(reply.reasoning.split())}, "total_tokens": 50 + output}


def response_object(body: dict, reply: Reply, response_id: str, *, output: list, done: bool) -> dict:
    return {"id": response_id, "object": "response", "created_at": int(time.time()),
            "status": "completed" if done else "in_progress", "model": body.get("model", MODEL), "output": output,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": body.get("tools") or [],
            "reasoning": body.get("reasoning"), "error": None, "incomplete_details": None,
            "usage": usage(reply, chat=False) if done else None}


def response_items(reply: Reply, stamp: int) -> list[dict]:
    """The finished output items of a reply: reasoning, then message, then function calls."""
    items: list[dict] = []
    if reply.reasoning:
        items.append({"id": f"rs_{stamp}", "type": "reasoning",
                      "summary": [{"type": "summary_text", "text": reply.reasoning}]})
    if reply.text:
        items.append({"id": f"msg_{stamp}", "type": "message", "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}]})
    for number, call in enumerate(reply.tool_calls):
        items.append({"id": f"fc_{stamp}_{number}", "type": "function_call", "status": "completed",
                      "call_id": call.id, "name": call.name, "arguments": json.dumps(call.args)})
    return items


def response_events(reply: Reply, body: dict) -> Iterator[dict]:
    """The events of a streamed Responses API response, as OpenAI sends them (without `sequence_number`s)."""
    stamp = time.time_ns()
    response_id = f"resp_{stamp}"
    items = response_items(reply, stamp)
    yield {"type": "response.created", "response": response_object(body, reply, response_id, output=[], done=False)}
    yield {"type": "response.in_progress",
           "response": response_object(body, reply, response_id, output=[], done=False)}
    for index, item in enumerate(items):
        yield from item_events(item, index)
    yield {"type": "response.completed", "response": response_object(body, reply, response_id, output=items,
                                                                        done=True)}


def item_events(item: dict, index: int) -> Iterator[dict]:
    at = {"output_index": index, "item_id": item["id"]}
    if item["type"] == "reasoning":
        text = item["summary"][0]["text"]
        yield {"type": "response.output_item.added", "output_index": index, "item": {**item, "summary": []}}
        yield {"type": "response.reasoning_summary_part.added", **at, "summary_index": 0,
               "part": {"type": "summary_text", "text": ""}}
        for piece in pieces(text):
            yield {"type": "response.reasoning_summary_text.delta", **at, "summary_index": 0, "delta": piece}
        yield {"type": "response.reasoning_summary_text.done", **at, "summary_index": 0, "text": text}
        yield {"type": "response.reasoning_summary_part.done", **at, "summary_index": 0,
               "part": {"type": "summary_text", "text": text}}
    elif item["type"] == "message":
        text = item["content"][0]["text"]
        yield {"type": "response.output_item.added", "output_index": index,
               "item": {**item, "status": "in_progress", "content": []}}
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        yield {"type": "response.content_part.added", **at, "content_index": 0, "part": part}
        for piece in pieces(text):
            yield {"type": "response.output_text.delta", **at, "content_index": 0, "delta": piece, "logprobs": []}
        yield {"type": "response.output_text.done", **at, "content_index": 0, "text": text, "logprobs": []}
        yield {"type": "response.content_part.done", **at, "content_index": 0, "part": {**part, "text": text}}
    else:
        yield {"type": "response.output_item.added", "output_index": index,
               "item": {**item, "status": "in_progress", "arguments": ""}}
        for piece in pieces(item["arguments"]):
            yield {"type": "response.function_call_arguments.delta", **at, "delta": piece}
        yield {"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"]}
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


# --- the server

class ScriptedOpenAI:
    """The server, in a thread of the test process: `base_url` for OPENAI_BASE_URL, `requests` as received."""

    def __init__(self):
        self.script = Script()
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="scripted-openai", daemon=True)

    def start(self) -> ScriptedOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def record(self, path: str, body: dict) -> Recorded:
        messages = responses_messages(body) if path.endswith("/responses") else chat_messages(body)
        recorded = Recorded(path, body, messages, tool_names(body))
        with self.lock:
            self.requests.append(recorded)
        return recorded

    def seen(self, tool: str) -> list[Recorded]:
        """The requests that offered `tool`, oldest first."""
        with self.lock:
            return [r for r in self.requests if tool in r.tools]


def _handler(server: ScriptedOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            path = self.path.split("?")[0]
            if path not in ("/v1/chat/completions", "/v1/responses") or "Bearer " not in self.headers.get(
                    "Authorization", ""):
                return self.json(404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})
            recorded = server.record(path, body)
            problem = conversation_problem(recorded.messages)
            if problem:
                return self.json(400, {"error": {"message": problem, "type": "invalid_request_error",
                                                 "param": "messages", "code": None}})
            reply = server.script.reply(recorded.messages, recorded.tools)
            chat = path.endswith("/chat/completions")
            if not body.get("stream"):
                return self.json(200, chat_completion(reply, body) if chat else response_items_whole(body, reply))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            if chat:
                for chunk in chat_completion_chunks(reply, body):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
            else:
                for number, event in enumerate(response_events(reply, body)):
                    event = {**event, "sequence_number": number}
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

        def json(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the standard library's name)
            pass

    return Handler


def response_items_whole(body: dict, reply: Reply) -> dict:
    """A Responses API response not streamed."""
    stamp = time.time_ns()
    return response_object(body, reply, f"resp_{stamp}", output=response_items(reply, stamp), done=True)
