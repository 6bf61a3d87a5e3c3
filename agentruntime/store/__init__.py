"""The chat's LangGraph store: items in our own database, through Django (django_store), langgraph.json's `store`
object (config_shape, config), search filters (search_filters), semantic search (vectors), its hand-written SQL
(hot_paths) and the sweep of expired items (expiry)."""
