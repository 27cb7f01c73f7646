"""ablate: choosing thresholds and mixtures by training small proxy models."""
