"""The two mock tools of the examples: `search_web` and a calculator that never calls `eval`."""

from __future__ import annotations

import ast
import asyncio
import json
import math
import operator
import os
from collections.abc import Callable
from typing import Any

from langchain_core.tools import tool
from pydantic import BaseModel, Field

SEARCH_DELAY_SECONDS = 0.3
CALCULATOR_DELAY_SECONDS = 0.1
# The examples' mock always returned one canned paragraph about LangGraph streaming, whatever was asked; this one
# answers about the query and says plainly that it is a mock, so the offline model never passes it off as a finding.
MOCK_TITLE = "Mock result for: {query}"
MOCK_SNIPPET = (
    "This search is a mock: no web request was made, so there are no real findings about {query} to report. "
    "A real search tool would summarise pages about {query} here."
)


def mock_search_results(query: str) -> dict:
    """What the mock search returns for `query`: one result about the query, marked as a mock."""
    topic = " ".join(query.split()) or "the empty query"
    return {"results": [{"title": MOCK_TITLE.format(query=topic), "snippet": MOCK_SNIPPET.format(query=topic),
                         "mock": True}]}


def delay_scale() -> float:
    """How much of the examples' artificial latency to keep (CHAT_AGENT_DELAY_SCALE, 1 = all of it)."""
    try:
        return max(0.0, float(os.environ.get("CHAT_AGENT_DELAY_SCALE", "1") or 1))
    except ValueError:
        return 1.0


class SearchInput(BaseModel):
    query: str = Field(description="Search query.")


class CalculatorInput(BaseModel):
    expression: str = Field(description="Math expression to evaluate.")


@tool("search_web", args_schema=SearchInput)
async def search_web(query: str) -> str:
    """Search the web for information."""
    await asyncio.sleep(SEARCH_DELAY_SECONDS * delay_scale())
    return json.dumps(mock_search_results(query))


@tool("calculator", args_schema=CalculatorInput)
async def calculator(expression: str) -> str:
    """Evaluate a math expression."""
    await asyncio.sleep(CALCULATOR_DELAY_SECONDS * delay_scale())
    return evaluate_expression(expression)


# ---------------------------------------------------------------------------------------------------------------
# Safe arithmetic: the expression is parsed into an AST and only numbers, arithmetic operators, a few functions and
# constants are evaluated. Sizes are bounded so that `9**9**9` cannot stall the process.
# ---------------------------------------------------------------------------------------------------------------
MAX_EXPRESSION_LENGTH = 500
MAX_EXPONENT = 10_000
MAX_INTEGER_DIGITS = 4_000

_NORMALISE = str.maketrans({"×": "*", "✕": "*", "✖": "*", "÷": "/", "−": "-", "–": "-", "—": "-"})
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "abs": abs, "round": round, "floor": math.floor, "ceil": math.ceil, "exp": math.exp,
    "log": math.log, "log10": math.log10, "log2": math.log2, "sin": math.sin, "cos": math.cos, "tan": math.tan,
    "min": min, "max": max,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


class ExpressionError(ValueError):
    pass


def normalise_expression(expression: str) -> str:
    # mathjs (the examples' evaluator) writes powers with ^.
    return expression.translate(_NORMALISE).replace("^", "**").strip()


def evaluate_expression(expression: str) -> str:
    """Evaluate arithmetic and return the result as text, or `Error evaluating: <expr> (<reason>)`."""
    try:
        if len(expression) > MAX_EXPRESSION_LENGTH:
            raise ExpressionError(f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
        value = _evaluate(ast.parse(normalise_expression(expression), mode="eval").body)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ExpressionError("result is not a finite number")
        return format_number(value)
    except SyntaxError:
        return f"Error evaluating: {expression} (invalid syntax)"
    except (ExpressionError, ArithmeticError, ValueError, TypeError, OverflowError) as exc:
        return f"Error evaluating: {expression} ({exc})"


def format_number(value: int | float) -> str:
    """Print like JavaScript's String(number): 714, not 714.0."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, complex):
            raise ExpressionError("result is not a real number")
        if isinstance(result, int) and result.bit_length() > MAX_INTEGER_DIGITS * 3.33:
            raise ExpressionError("result is too large")
        return result
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        if node.keywords:
            raise ExpressionError("keyword arguments are not supported")
        return _FUNCTIONS[node.func.id](*[_evaluate(arg) for arg in node.args])
    raise ExpressionError(f"unsupported element {_describe(node)}")


def _check_power(base: int | float, exponent: int | float) -> None:
    if abs(exponent) > MAX_EXPONENT:
        raise ExpressionError("exponent is too large")
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        if max(abs(base), 2).bit_length() * exponent > MAX_INTEGER_DIGITS * 3.33:
            raise ExpressionError("result is too large")


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return repr(node.id)
    if isinstance(node, ast.Constant):
        return repr(node.value)
    return type(node).__name__
