"""trainer side: recipes (phases and mixtures) and the deterministic loader that reads shards."""
