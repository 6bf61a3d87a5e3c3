"""The chat's LangGraph store: items in our own database, through Django (base), langgraph.json's `store` object
(schema, config), search filters (filters), semantic search (vectors), its hand-written SQL (sql) and the sweep of
expired items (expiry)."""
