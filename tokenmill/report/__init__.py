"""report: the yield table, alerts, distributions, contamination, dataset card and index.html of a version."""
