"""Task metrics: per-second counts and lateness for the dashboard, Prometheus totals."""
