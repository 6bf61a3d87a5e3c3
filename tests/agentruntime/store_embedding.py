"""A deterministic embedding function for the store's tests (as CharacterEmbeddings in LangGraph's own store tests):
a text's vector is the sum of a fixed pseudo-random vector per character, so texts sharing characters are close.

Each character's vector depends on the character alone (not on which texts came first), so the tests' process and a
deployed revision's serving process (which loads this file as the project's `./embed.py`) embed alike.
"""

from __future__ import annotations

import random

DIMS = 16


def _character(char: str) -> list[float]:
    rng = random.Random(ord(char))
    return [rng.uniform(-1.0, 1.0) for _ in range(DIMS)]


def embed(text: str) -> list[float]:
    vector = [0.0] * DIMS
    for char in text.lower():
        for i, component in enumerate(_character(char)):
            vector[i] += component
    return vector


def embed_texts(texts: list[str]) -> list[list[float]]:
    return [embed(text) for text in texts]


async def aembed_texts(texts: list[str]) -> list[list[float]]:
    return embed_texts(texts)


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5
    return dot / norms if norms else 0.0
