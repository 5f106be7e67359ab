"""The shop's REST API under /api/, nothing else."""

from django.urls import include, path  # type: ignore[import-untyped]

urlpatterns = [path("api/", include("oscarapi.urls"))]
