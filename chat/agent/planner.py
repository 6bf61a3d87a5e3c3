"""How the offline scripted model reads a request: which parts are lookups and which are arithmetic.

Deliberately generic rules (clauses, arithmetic patterns, question and lookup verbs), so that any phrasing of
"look something up" and "calculate something" is delegated, not only the examples' sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_WORD_OPERATORS = [
    (r"\bmultiplied\s+by\b", "*"), (r"\btimes\b", "*"), (r"\bdivided\s+by\b", "/"), (r"\bover\b", "/"),
    (r"\bplus\b", "+"), (r"\bminus\b", "-"), (r"\bto\s+the\s+power\s+of\b", "^"), (r"\bmodulo\b", "%"),
    (r"\bmod\b", "%"),
]
_SQUARED = re.compile(r"(\d+(?:\.\d+)?|\))\s+(squared|cubed)\b", re.IGNORECASE)
_FUNCTION_NAMES = r"(?:sqrt|abs|round|floor|ceil|log10|log2|log|exp|sin|cos|tan|min|max)"
_NUMBER = r"\d+(?:\.\d+)?"
_OPERAND = rf"(?:{_FUNCTION_NAMES}\s*)?[(\s]*[-−]?\s*(?:{_NUMBER}|pi)(?:\s*,\s*[-−]?{_NUMBER})*[)\s]*"
_OPERATOR = r"(?:\*\*|[-+*/×✕✖÷−–—^%])"
# Either an operation between operands, or a function call on a number ("sqrt(2)").
_EXPRESSION = re.compile(rf"{_OPERAND}(?:{_OPERATOR}{_OPERAND})+|{_FUNCTION_NAMES}\s*\([^()]*\)", re.IGNORECASE)

_CLAUSE_SPLIT = re.compile(r"[;!?\n]+|,\s+|,(?!\d)|\.(?:\s+|$)|\s+and\s+(?:then\s+|also\s+)?|\s+then\s+", re.IGNORECASE)
_FILLER = re.compile(
    r"^(?:(?:and|also|separately|then|please|pls|can\s+you|could\s+you|would\s+you|kindly|now|next|finally|"
    r"additionally|i\s+want\s+you\s+to|i'd\s+like\s+you\s+to)\b[\s,]*)+",
    re.IGNORECASE,
)
_MATH_VERBS = re.compile(
    r"^(?:calculate|compute|evaluate|work\s+out|solve|what\s+is|what's|whats|how\s+much\s+is)\b\s*", re.IGNORECASE
)
_LOOKUP_VERBS = re.compile(
    r"^(?:research|look\s+up|lookup|search\s+(?:the\s+web\s+)?for|search|find\s+out\s+about|find\s+out|find|"
    r"tell\s+me\s+about|give\s+me\s+(?:an?\s+)?(?:overview|summary)\s+of|summari[sz]e|explain|describe|"
    r"learn\s+about|investigate|check)\b\s*",
    re.IGNORECASE,
)
_QUESTION = re.compile(r"^(?:who|what|when|where|why|how|which|is|are|does|do|did|can)\b", re.IGNORECASE)
_SMALL_TALK = re.compile(
    r"^(?:hi|hello|hey|thanks|thank\s+you|ok|okay|cool|great|bye|good\s+(?:morning|evening|night))\b", re.IGNORECASE
)


@dataclass
class Plan:
    lookups: list[str] = field(default_factory=list)
    calculations: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.lookups and not self.calculations


def words_to_operators(text: str) -> str:
    for pattern, symbol in _WORD_OPERATORS:
        text = re.sub(pattern, symbol, text, flags=re.IGNORECASE)
    return _SQUARED.sub(lambda m: f"{m.group(1)} ^ {2 if m.group(2).lower() == 'squared' else 3}", text)


def find_expressions(text: str) -> list[str]:
    """Arithmetic expressions in the text, in order ("42 * 17", "sqrt(2)", "6 times 7" → "6 * 7")."""
    found = []
    for match in _EXPRESSION.finditer(words_to_operators(text)):
        expression = _balance(match.group(0).strip().rstrip(".,"))
        if re.search(r"\d|pi", expression) and expression not in found:
            found.append(expression)
    return found


def _balance(expression: str) -> str:
    # The operand pattern may swallow a closing parenthesis of the sentence or miss an opening one.
    while expression.count(")") > expression.count("(") and expression.endswith(")"):
        expression = expression[:-1].rstrip()
    while expression.count("(") > expression.count(")") and expression.startswith("("):
        expression = expression[1:].lstrip()
    return expression


def plan_request(text: str) -> Plan:
    """Split a user request into lookups (topics) and calculations (expressions)."""
    plan = Plan()
    for clause in _CLAUSE_SPLIT.split(text or ""):
        clause = _FILLER.sub("", clause.strip()).strip()
        if not clause:
            continue
        expressions = find_expressions(clause)
        if expressions:
            plan.calculations.extend(e for e in expressions if e not in plan.calculations)
            continue
        topic = lookup_topic(clause)
        if topic and topic not in plan.lookups:
            plan.lookups.append(topic)
    return plan


def lookup_topic(clause: str) -> str | None:
    """The topic to look up when the clause asks for information, else None."""
    if _SMALL_TALK.match(clause) or _MATH_VERBS.match(clause) and not _QUESTION.match(clause):
        return None
    stripped = _LOOKUP_VERBS.sub("", clause).strip(" .:")
    if stripped != clause.strip(" .:"):
        return stripped or None
    if _QUESTION.match(clause) and len(re.findall(r"[A-Za-z]{2,}", clause)) >= 3:
        return clause.strip(" .:")
    return None


def research_query(description: str) -> str:
    """What the researcher searches for, given the coordinator's task description."""
    text = re.sub(r"\s+and\s+summari[sz]e\b.*$", "", description.strip(), flags=re.IGNORECASE)
    return _LOOKUP_VERBS.sub("", text).strip(" .:") or description.strip()


def calculation_expression(description: str) -> str:
    """The expression the math-whiz evaluates, given the coordinator's task description."""
    expressions = find_expressions(description)
    if expressions:
        return expressions[0]
    return _MATH_VERBS.sub("", description.strip()).strip(" .?") or description.strip()
