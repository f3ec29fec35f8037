"""Monitoring tools that read ops/ (the dashboards) and query a Prometheus: python -m ops.render_panels."""
