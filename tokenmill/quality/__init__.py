"""Quality and safety signals: stored as values, applied by select."""
