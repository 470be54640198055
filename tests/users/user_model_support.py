"""A tiny scripted OpenAI-compatible chat server that plays a conversation's user, for the LLM
user's tests: a real Starlette app on a real socket, read by the real openai SDK.

It knows nothing of chaoseval: it reads the facts from the system prompt the LLM user sends
(``- order number: ORD-1042``) and answers the agent's last message. ``mode`` picks how it
behaves: ``good`` (answers what is asked, agrees to a proposal), ``leak`` (repeats its goal),
``misstate`` (gives an order number it was never told), ``fail`` (a 500 to every request).
"""

from __future__ import annotations

import re
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

USER_KEY = "sk-user-planted-0123456789abcdef"
KEY_ENV = "CHAOSEVAL_TEST_USER_MODEL_KEY"


class ScriptedUser:
    def __init__(self, mode: str = "good") -> None:
        self.mode = mode
        self.seen: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.seen.append((dict(request.headers), body))
        if self.mode == "fail":
            return JSONResponse({"error": {"message": "upstream down", "type": "server"}}, 500)
        return JSONResponse(
            {
                "id": "chatcmpl-user",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": self.reply(body)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
            }
        )

    def reply(self, body: dict[str, Any]) -> str:
        system = body["messages"][0]["content"]
        agent = body["messages"][-1]["content"]
        facts = dict(re.findall(r"^- ([^:\n]+): (.+)$", system, re.MULTILINE))
        # A plugin's way of writing a fact this turn (a typo), as the LLM user words it.
        facts |= dict(re.findall(r"give your ([^\n]+?) in this reply, write it exactly as (\S+)\.$",
                                 system, re.MULTILINE))  # fmt: skip
        if self.mode == "leak":
            goal = re.search(r"never quote it\): (.+)", system)
            return f"Well, here is the thing: {goal[1] if goal else ''}"
        if self.mode == "misstate":
            return "My order number is ORD-9999."
        low = agent.casefold()
        if "?" in agent and ("shall i" in low or "confirm" in low or "refund" in low):
            return "Yes, that's right. Please go ahead."
        if "order" in low:
            return f"My order number is {facts.get('order number', '?')}."
        if "amount" in low or "how much" in low:
            return f"I paid {facts.get('amount', '?')}."
        return "I just want my money back, please."
