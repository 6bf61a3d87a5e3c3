"""No Django views in a serving process: everything it serves is routed in deployments/serving_asgi.py."""

urlpatterns: list = []
