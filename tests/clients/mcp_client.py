#!/usr/bin/env python3
"""Drive an MCP server with the official Python SDK (`mcp` 2.3) from a JSON script of steps.

Made for the Rust integration tests: they spawn it with .venv/bin/python (set up by
scripts/setup-test-tools.sh) so that a real, independent client checks the server.

    mcp_client.py (--stdio "CMD ARGS..." | --http URL | --sse URL | --config-entry FILE#NAME)
                  [--expand none|claude-code|cursor] [--mode legacy|auto] --script FILE|-

--config-entry FILE#NAME  start the server the way an MCP client would from its
               configuration file: `mcpServers[NAME]` of FILE gives command, args and env.
               `--expand` says how the client expands references to its own environment in
               those strings: claude-code `${VAR}` / `${VAR:-default}` (an unset VAR stays as
               written, as Claude Code leaves it), cursor `${env:VAR}`, none (Claude Desktop).
               Like those clients, the server gets only the SDK's default environment (HOME,
               PATH, ...) plus the entry's env block.

--sse URL      the HTTP+SSE transport of protocol 2024-11-05 (GET URL, POST to the announced
               endpoint); always the legacy handshake.

--mode legacy  initialize handshake, protocol 2025-11-25 (sessions); tools/list_changed
               arrives as a plain notification, received through `message_handler`.
--client-name  the clientInfo.name sent at initialization, to act as a known client.

--elicit-answer JSON  declare elicitation and accept each form elicitation with this
               content (recorded under "elicitations"; URL ones are declined).

--sample-answer TEXT  declare sampling and answer each sampling/createMessage with TEXT
               (the requests recorded under "samplings").

--consent-as LOGIN  handle URL elicitations (the client then declares elicitation): open the
               link as a person would (tests/clients/browser_consent.py signs in at the test
               provider as LOGIN and allows access), then accept. Each is recorded under
               "elicitations". --consent-deny declines instead, without opening the link.

--mode auto    the SDK default: probes `server/discover` and speaks 2026-07-28 if the server
               does (falls back to legacy otherwise). At 2026-07-28 change notifications
               only travel on a `subscriptions/listen` stream, so one is opened with
               client.listen(tools_list_changed=True) right after connecting.

Script: a JSON array of steps, run in order:
  {"op": "list_tools", "cache_mode": "use|refresh|bypass"}  (all pages; default "use",
         i.e. the SDK's response cache honours the server's ttlMs like a real client;
         records each page's ttlMs, cacheScope and nextCursor under "hints")
  {"op": "list_page", "cursor": "..."}  one page at that cursor, uncached
  {"op": "call", "tool": "NAME", "args": {...}, "progress": true}  (with "progress", a
         progress callback is given: the call carries a progress token, and each
         notifications/progress received is recorded under "progress" as
         [progress, total, message])
  {"op": "wait_list_changed", "timeout": 10}   true if a tools list_changed arrived since
         the previous wait (or connect), else false after the timeout
  {"op": "sleep", "seconds": 0.5}
Any step may set "expect_error": true: a JSON-RPC error answer is then recorded as data
({"error": {"code", "message", "data"}}) instead of failing the run.

Output: ONE JSON document on stdout: {"ok", "protocolVersion", "serverInfo",
"capabilities", "listen", "steps": [...], "notifications": {...}}. Exit 0 when the
transport and protocol worked (a tool result with isError is data); exit 1 with a message
on stderr on a transport/protocol failure or an unexpected JSON-RPC error (the document,
with "ok": false and the steps done so far, is still printed).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from contextlib import AsyncExitStack
from typing import Any

import anyio
import browser_consent
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# JSON-RPC codes the SDK itself uses for a dead connection / no answer: never "data".
TRANSPORT_CODES = {types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT}


class Failure(Exception):
    pass


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


class Changes:
    """Counts tools/list_changed arrivals per source; waiters see level-triggered news."""

    def __init__(self) -> None:
        self.counts = {"message_handler": 0, "listen": 0}
        self.seen = 0
        self.source = "message_handler"
        self._event = anyio.Event()

    def hit(self, source: str) -> None:
        self.counts[source] += 1
        self._event.set()
        self._event = anyio.Event()

    async def wait(self, timeout: float) -> bool:
        with anyio.move_on_after(timeout):
            while self.counts[self.source] <= self.seen:
                await self._event.wait()
        news = self.counts[self.source] > self.seen
        self.seen = self.counts[self.source]  # several notifications count as one change
        return news


async def run_steps(client: Client, steps: list[dict], changes: Changes, out: list) -> None:
    for i, step in enumerate(steps):
        op = step.get("op")
        rec: dict[str, Any] = {"op": op}
        out.append(rec)
        try:
            if op == "list_tools":
                tools, cursor, pages, hints = [], None, 0, []
                while True:  # walk every page, capped so a bad cursor cannot loop forever
                    page = await client.list_tools(cursor=cursor, cache_mode=step.get("cache_mode", "use"))
                    tools += [dump(t) for t in page.tools]
                    pages += 1
                    hints.append({"ttlMs": page.ttl_ms, "cacheScope": getattr(page.cache_scope, "value", page.cache_scope),
                                  "nextCursor": page.next_cursor})
                    cursor = page.next_cursor
                    if cursor is None or pages >= 100:
                        break
                rec.update(names=[t["name"] for t in tools], tools=tools, pages=pages, hints=hints)
            elif op == "list_page":  # one page, at the step's cursor (a client's raw request)
                page = await client.list_tools(cursor=step.get("cursor"), cache_mode="bypass")
                rec.update(names=[t.name for t in page.tools], nextCursor=page.next_cursor)
            elif op == "call":
                rec["tool"] = step["tool"]
                callback = None
                if step.get("progress"):
                    seen: list = []
                    rec["progress"] = seen

                    async def callback(progress, total, message, seen=seen):
                        seen.append([progress, total, message])

                res = dump(await client.call_tool(step["tool"], step.get("args") or {},
                                                  progress_callback=callback))
                rec.update(isError=res.pop("isError", False), **res)
            elif op == "wait_list_changed":
                rec["changed"] = await changes.wait(float(step.get("timeout", 10)))
            elif op == "sleep":
                await anyio.sleep(float(step.get("seconds", 0)))
            else:
                raise Failure(f"step {i}: unknown op {op!r}")
        except MCPError as e:
            rec["error"] = {"code": e.code, "message": e.message, "data": e.data}
            if e.code in TRANSPORT_CODES or not step.get("expect_error"):
                raise Failure(f"step {i} ({op}): JSON-RPC error {e.code}: {e.message}") from e


async def drain_listen(sub, changes: Changes) -> None:
    async for event in sub:  # SubscriptionLost propagates: the stream broke
        if isinstance(event, ToolsListChanged):
            changes.hit("listen")


async def main_async(args, steps: list[dict], doc: dict) -> None:
    changes = Changes()
    transport_errors: list[str] = doc["transportErrors"]

    async def on_message(msg) -> None:
        # Legacy era: notifications arrive here. Exceptions are transport faults.
        if isinstance(msg, Exception):
            transport_errors.append(f"{type(msg).__name__}: {msg}")
        elif isinstance(msg, types.ToolListChangedNotification):
            changes.hit("message_handler")

    if args.config_entry:
        server = entry_server(args.config_entry, args.expand)
    elif args.stdio:
        argv = shlex.split(args.stdio)
        # Pass our whole environment on (the SDK would keep only HOME/PATH/...): tests
        # configure the server through env vars set on this driver.
        server: Any = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    elif args.sse:
        headers = {k.strip(): v.strip() for k, v in (h.split(":", 1) for h in args.header)}
        server = sse_client(args.sse, headers=headers or None)
    elif args.header:
        headers = dict(h.split(":", 1) for h in args.header)
        http = create_mcp_http_client(headers={k.strip(): v.strip() for k, v in headers.items()})
        server = streamable_http_client(args.http, http_client=http)
    else:
        server = args.http

    # 2024-11-05 has only the initialize handshake: no discovery probe on that transport.
    mode = "legacy" if args.sse else args.mode
    info = types.Implementation(name=args.client_name, version="1.0") if args.client_name else None
    elicitation = None
    if args.consent_as or args.consent_deny or args.elicit_answer:
        doc["elicitations"] = []

        async def elicitation(context, params):
            entry = {"mode": getattr(params, "mode", "form"), "message": params.message,
                     "url": getattr(params, "url", None)}
            doc["elicitations"].append(entry)
            if entry["url"] is None and args.elicit_answer:
                return types.ElicitResult(action="accept", content=json.loads(args.elicit_answer))
            if args.consent_deny or entry["url"] is None:
                return types.ElicitResult(action="decline")
            entry["page"] = await browser_consent.consent(entry["url"], args.consent_as)
            return types.ElicitResult(action="accept")

    sampling = None
    if args.sample_answer:
        doc["samplings"] = []

        async def sampling(context, params):
            doc["samplings"].append(dump(params))
            return types.CreateMessageResult(role="assistant", model="test-model",
                                             content=types.TextContent(text=args.sample_answer))

    client = Client(server, mode=mode, message_handler=on_message, read_timeout_seconds=args.timeout,
                    client_info=info, elicitation_callback=elicitation, sampling_callback=sampling)
    async with AsyncExitStack() as stack:
        if args.header and not args.sse:  # a caller-supplied httpx client must be open before the transport uses it
            await stack.enter_async_context(http)
        await stack.enter_async_context(client)
        doc["protocolVersion"] = client.protocol_version
        doc["serverInfo"] = dump(client.server_info) if client.server_info else None
        doc["capabilities"] = dump(client.server_capabilities)
        sub = None
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # 2026-07-28: list_changed is delivered only on a listen stream; the SDK also
            # tees its events to message_handler, so count the stream's own events.
            # A server that refuses the stream still gets its other steps run: the refusal
            # is recorded, and wait_list_changed then answers false.
            changes.source = "listen"
            try:
                sub = await stack.enter_async_context(client.listen(tools_list_changed=True))
                doc["listen"] = dump(sub.honored)
            except (MCPError, SubscriptionLost) as e:
                doc["listen"] = {"error": f"{type(e).__name__}: {e}"}
        async with anyio.create_task_group() as tg:
            if sub is not None:
                tg.start_soon(drain_listen, sub, changes)
            try:
                await run_steps(client, steps, changes, doc["steps"])
            finally:
                doc["notifications"] = dict(changes.counts, waitedOn=changes.source)
                tg.cancel_scope.cancel()
    if transport_errors:
        raise Failure("transport errors: " + "; ".join(transport_errors))


def expand(text: str, how: str) -> str:
    """A client's expansion of environment references in a configuration string."""
    if how == "claude-code":
        def sub(m: re.Match) -> str:
            name, default = m.group(1), m.group(3)
            if name in os.environ:
                return os.environ[name]
            return default if default is not None else m.group(0)
        return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}", sub, text)
    if how == "cursor":
        return re.sub(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}",
                      lambda m: os.environ.get(m.group(1), m.group(0)), text)
    return text


def entry_server(spec: str, how: str) -> StdioServerParameters:
    path, _, name = spec.rpartition("#")
    with open(path) as f:
        entry = json.load(f)["mcpServers"][name]
    if entry.get("type", "stdio") != "stdio":
        raise Failure(f"{path}: {name} is not a stdio server")
    env = {k: expand(v, how) for k, v in (entry.get("env") or {}).items()}
    return StdioServerParameters(command=expand(entry["command"], how),
                                 args=[expand(a, how) for a in entry.get("args", [])], env=env)


def flatten(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [e for sub in exc.exceptions for e in flatten(sub)]
    return [exc]


def main() -> int:
    ap = argparse.ArgumentParser(description="Run a JSON script of MCP steps with the mcp SDK.")
    target = ap.add_mutually_exclusive_group(required=True)
    target.add_argument("--stdio", help='server command line, e.g. "target/debug/shortlist serve"')
    target.add_argument("--http", help="streamable HTTP endpoint URL, e.g. http://127.0.0.1:PORT/mcp")
    target.add_argument("--sse", help="legacy HTTP+SSE endpoint URL, e.g. http://127.0.0.1:PORT/sse")
    target.add_argument("--config-entry", help="FILE#NAME: the stdio server mcpServers[NAME] of a client config")
    ap.add_argument("--expand", choices=["none", "claude-code", "cursor"], default="none",
                    help="how the client expands environment references in --config-entry")
    ap.add_argument("--mode", choices=["legacy", "auto"], default="auto")
    ap.add_argument("--script", required=True, help="JSON file of steps, or - for stdin")
    ap.add_argument("--header", action="append", default=[], help='HTTP header "Name: value"')
    ap.add_argument("--timeout", type=float, default=30, help="per-request read timeout (s)")
    ap.add_argument("--client-name", help="clientInfo.name to send (default: the SDK's)")
    ap.add_argument("--consent-as", help="handle URL elicitations by consenting as this login")
    ap.add_argument("--consent-deny", action="store_true", help="decline URL elicitations")
    ap.add_argument("--elicit-answer", help="accept form elicitations with this JSON content")
    ap.add_argument("--sample-answer", help="declare sampling and answer each request with this text")
    ap.add_argument("--total-timeout", type=float, default=120, help="whole run (s)")
    args = ap.parse_args()

    with (sys.stdin if args.script == "-" else open(args.script)) as f:
        steps = json.load(f)
    doc: dict[str, Any] = {"ok": False, "mode": args.mode, "protocolVersion": None, "listen": None,
                           "steps": [], "notifications": {}, "transportErrors": []}
    error = None
    try:
        anyio.run(_with_deadline, args, steps, doc)
        doc["ok"] = True
    except BaseException as exc:  # noqa: BLE001 - every failure becomes exit 1 + message
        errs = flatten(exc)
        error = "; ".join(f"{type(e).__name__}: {e}" for e in errs)
        if any(isinstance(e, TimeoutError) for e in errs) and not doc["ok"]:
            error += f" (run exceeded --total-timeout {args.total_timeout}s?)"
        if isinstance(exc, KeyboardInterrupt):
            error = "interrupted"
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    if error:
        print(f"mcp_client: {error}", file=sys.stderr)
        return 1
    return 0


async def _with_deadline(args, steps, doc) -> None:
    with anyio.fail_after(args.total_timeout):
        await main_async(args, steps, doc)


if __name__ == "__main__":
    sys.exit(main())
