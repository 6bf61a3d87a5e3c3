"""The deep agent served by the chat app: a coordinator with two subagents (no Django here)."""
